// Package settings derives a command line's flags, environment variables,
// configuration-file keys and usage text from one table of Settings, so
// that each setting is spelled once.
//
// One precedence rule, per setting: a flag, else the environment, else the
// configuration file, else the default. A list or map setting (a host
// list, catalog properties, source regimes) is one setting: it comes whole
// from the first of those that gives it, never merged entry by entry, so
// that a flag set meant to replace the file's entries does not inherit
// one of them unseen.
//
// Names derive from the configuration-file key: object.s3.region is the
// flag --object-s3-region and the variable COVMIRROR_OBJECT_S3_REGION. A
// former name (Setting.Aliases) keeps working in all three places; given
// beside the current name it is the same flag given twice, or the same key
// twice in the file, and refused, while in the environment the current
// name's variable wins (variables gather from several places while a
// rename rolls out).
//
// A default stands in for a setting given nowhere, never for one given as
// nothing: a NonEmpty setting (a schema, a namespace) given empty by a flag
// or the file is refused, since its default may be another pipeline's. A
// list's empty items outside a flag (a trailing comma) are skipped.
//
// The configuration file is key = value lines; a key given twice is a
// mistake, never "the last wins". A # at the start of a line or after a
// space or tab starts a comment; \# is a literal # anywhere, and a # inside
// a word (pa#ss) is literal too.
//
// Secret settings (a database URL) are printed redacted: their default in
// the usage text, and a refused value in an error (Redact). A file's line
// that is not key = value, or whose text before = has no key's shape (a
// credential pasted whole, with an = of its own), is named by its number
// only.
package settings
