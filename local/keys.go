package local

import (
	"encoding/binary"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
)

// Key layout. Every key starts with a kind byte, so the kinds never mix in a
// scan:
//
//	kindMeta         name                               -> meta value
//	kindCovered      sink topic partition start         -> end (8 bytes)
//	kindCheckpointed sink topic partition start         -> end (8 bytes)
//	kindPendingSince sink topic partition               -> unix nanos (8 bytes)
//	kindState        event id                           -> gap state JSON (states.go)
//
// Strings are encoded order-preserving and prefix-free: 0x00 becomes
// 0x00 0xFF and the string ends with 0x00 0x01, so "a" < "a\x00" < "ab" and no
// destination's encoding is a prefix of another's. The partition is 4 bytes
// big-endian with the sign bit flipped, the start 8 bytes big-endian, so a
// destination's ranges are one prefix scan in start order.
const (
	kindMeta         byte = 0x01
	kindCovered      byte = 0x10
	kindCheckpointed byte = 0x11
	kindPendingSince byte = 0x12
)

const (
	escapeByte    = 0x00
	escapedNul    = 0xFF
	terminatorEnd = 0x01
)

// appendString appends s's order-preserving, prefix-free encoding.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] == escapeByte {
			dst = append(dst, escapeByte, escapedNul)
			continue
		}
		dst = append(dst, s[i])
	}
	return append(dst, escapeByte, terminatorEnd)
}

// decodeString reads a string written by appendString and returns the rest.
func decodeString(b []byte) (string, []byte, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != escapeByte {
			out = append(out, b[i])
			continue
		}
		if i+1 >= len(b) {
			return "", nil, fmt.Errorf("string ends inside an escape")
		}
		switch b[i+1] {
		case escapedNul:
			out = append(out, 0)
			i++
		case terminatorEnd:
			return string(out), b[i+2:], nil
		default:
			return "", nil, fmt.Errorf("bad escape 0x00 0x%02x", b[i+1])
		}
	}
	return "", nil, fmt.Errorf("string has no terminator")
}

// destinationPrefix is kind followed by d's encoding: the prefix every key
// of d's ranges of that kind starts with.
func destinationPrefix(dst []byte, kind byte, d coverage.Destination) []byte {
	dst = append(dst, kind)
	dst = appendString(dst, d.Sink)
	dst = appendString(dst, d.Topic)
	return binary.BigEndian.AppendUint32(dst, uint32(d.Partition)^0x80000000)
}

// rangeKey is the key of the range of d starting at start.
func rangeKey(dst []byte, kind byte, d coverage.Destination, start uint64) []byte {
	return binary.BigEndian.AppendUint64(destinationPrefix(dst, kind, d), start)
}

// decodeRangeKey splits a kindCovered or kindCheckpointed key.
func decodeRangeKey(key []byte) (kind byte, d coverage.Destination, start uint64, err error) {
	d, rest, err := decodeDestinationKey(key)
	if err != nil {
		return 0, d, 0, err
	}
	if len(rest) != 8 {
		return 0, d, 0, fmt.Errorf("range key %x: %d bytes after the destination, want 8", key, len(rest))
	}
	return key[0], d, binary.BigEndian.Uint64(rest), nil
}

// decodeDestinationKey reads the kind byte and destination of key and
// returns what follows them.
func decodeDestinationKey(key []byte) (coverage.Destination, []byte, error) {
	if len(key) == 0 {
		return coverage.Destination{}, nil, fmt.Errorf("empty key")
	}
	sink, rest, err := decodeString(key[1:])
	if err != nil {
		return coverage.Destination{}, nil, fmt.Errorf("key %x: sink: %w", key, err)
	}
	topic, rest, err := decodeString(rest)
	if err != nil {
		return coverage.Destination{}, nil, fmt.Errorf("key %x: topic: %w", key, err)
	}
	if len(rest) < 4 {
		return coverage.Destination{}, nil, fmt.Errorf("key %x: truncated partition", key)
	}
	d := coverage.Destination{Sink: sink, Topic: topic, Partition: int32(binary.BigEndian.Uint32(rest) ^ 0x80000000)}
	return d, rest[4:], nil
}

func encodeUint64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func decodeUint64(b []byte) (uint64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("value of %d bytes, want 8", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

func metaKey(name string) []byte { return append([]byte{kindMeta}, name...) }
