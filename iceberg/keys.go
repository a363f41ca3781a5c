package iceberg

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	ice "github.com/apache/iceberg-go"
)

// maxKeyPrefix bounds the readable part of a hashed key: a key stays under
// about 100 bytes, well within any file system's name limit.
const maxKeyPrefix = 64

// PathKey is the path-safe partition key of a sink or source name: bytes
// of [A-Za-z0-9_-] pass, every other byte becomes ~XX (upper-case hex), so
// the key is one path segment with nothing for a URL or a file system to
// interpret. A key longer than 96 bytes becomes its first encoded units (at
// most 64 bytes), "~~" and 32 hex digits of the name's SHA-256; "~~" never
// occurs in an unhashed key. Unhashed keys decode back to the name
// (NameOfKey); readers filter on the key and on the name, so a hashed key
// shared by two names cannot mix their rows.
func PathKey(name string) string {
	var b strings.Builder
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('~')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	key := b.String()
	if len(key) <= maxKeyPrefix+2+32 {
		return key
	}
	cut := maxKeyPrefix
	// Cut at a unit boundary: never inside a ~XX.
	if i := strings.LastIndexByte(key[:cut], '~'); i >= cut-2 {
		cut = i
	}
	sum := sha256.Sum256([]byte(name))
	return key[:cut] + "~~" + hex.EncodeToString(sum[:16])
}

// NameOfKey decodes an unhashed PathKey; ok is false for a hashed key or
// one PathKey cannot have made.
func NameOfKey(key string) (name string, ok bool) {
	if strings.Contains(key, "~~") {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(key); i++ {
		if key[i] != '~' {
			b.WriteByte(key[i])
			continue
		}
		if i+2 >= len(key) {
			return "", false
		}
		v, err := hex.DecodeString(key[i+1 : i+3])
		if err != nil {
			return "", false
		}
		b.WriteByte(v[0])
		i += 2
	}
	return b.String(), PathKey(b.String()) == key
}

// SinkOf is the sink of a data file of the coverage table: its partition
// key decoded, or, for a hashed key, the sink column's bounds, which the
// table records in full (one sink per file). ok is false when neither
// names it.
func SinkOf(df ice.DataFile) (string, bool) {
	key, found := "", false
	for _, v := range df.Partition() {
		if s, ok := v.(string); ok {
			key, found = s, true
		}
	}
	if !found {
		return "", false
	}
	if name, ok := NameOfKey(key); ok {
		return name, true
	}
	lo, hi := df.LowerBoundValues()[1], df.UpperBoundValues()[1]
	if lo != nil && string(lo) == string(hi) && PathKey(string(lo)) == key {
		return string(lo), true
	}
	return "", false
}
