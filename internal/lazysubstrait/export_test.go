package lazysubstrait

// Exported for the external test, which must be outside the package: it
// imports iceberg-go's substrait package, which would otherwise be
// initialized before this one.
var (
	TheCollection = collection
	Unsupported   = unsupported
)
