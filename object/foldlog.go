package object

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A fold log lists the checkpoints one fold folded, so that Landed still
// finds a checkpoint whose delta the fold deleted:
//
//	"CVMF" version=1
//	count, then per checkpoint: writer name digest(16 bytes)
//	CRC-32C of everything before it, 4 bytes big-endian
//
// Its key is folds/<unix ns, 20 digits>-<random>, so that a listing is in
// time order and old logs are pruned by their key alone.
const foldMagic = "CVMF"

type foldEntry struct {
	Writer, Name string
	Digest       [digestLen]byte
}

func encodeFoldLog(es []foldEntry) []byte {
	b := append([]byte(foldMagic), frameVer)
	b = binary.AppendUvarint(b, uint64(len(es)))
	for _, e := range es {
		b = appendString(b, e.Writer)
		b = appendString(b, e.Name)
		b = append(b, e.Digest[:]...)
	}
	return sealed(b)
}

func decodeFoldLog(b []byte) ([]foldEntry, error) {
	r, err := openFrame(b, foldMagic, "fold log")
	if err != nil {
		return nil, err
	}
	n := r.count("checkpoint count", 2+digestLen)
	out := make([]foldEntry, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		e := foldEntry{Writer: r.string("writer"), Name: r.string("name")}
		if r.err == nil && len(r.b)-r.off < digestLen {
			r.fail("truncated in a digest")
		}
		if r.err == nil {
			copy(e.Digest[:], r.b[r.off:])
			r.off += digestLen
			out = append(out, e)
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return out, nil
}

func foldLogKey(prefix string, at time.Time) string {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("%s%s%020d-%s", prefix, foldsDir, at.UnixNano(), hex.EncodeToString(rnd[:]))
}

// foldLogTime is when the fold log under key was written; false for a
// key that is not a fold log's.
func foldLogTime(prefix, key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, prefix+foldsDir)
	if !ok || len(rest) < 21 || rest[20] != '-' {
		return time.Time{}, false
	}
	ns, err := strconv.ParseInt(rest[:20], 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, ns), true
}

// foldLogs lists the fold logs, newest first.
func (s *Tier) foldLogs(ctx context.Context) ([]string, error) {
	keys, err := s.opts.Blobs.List(ctx, s.opts.Prefix+foldsDir)
	if err != nil {
		return nil, fmt.Errorf("list %s%s of %s: %w", s.opts.Prefix, foldsDir, s.opts.Blobs.Name(), err)
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { _, ok := foldLogTime(s.opts.Prefix, k); return !ok })
	slices.Reverse(keys)
	return keys, nil
}

// inFoldLogs returns the entry of writer's checkpoint name in a fold log,
// reading the newest first: a checkpoint of unknown outcome is looked for
// soon after it was written.
func (s *Tier) inFoldLogs(ctx context.Context, writer, name string) (foldEntry, bool, error) {
	keys, err := s.foldLogs(ctx)
	if err != nil {
		return foldEntry{}, false, err
	}
	for _, key := range keys {
		data, _, err := s.opts.Blobs.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			continue // pruned meanwhile
		}
		if err != nil {
			return foldEntry{}, false, fmt.Errorf("read %s of %s: %w", key, s.opts.Blobs.Name(), err)
		}
		es, err := decodeFoldLog(data)
		if err != nil {
			s.opts.Logger.Warn("object: an unreadable fold log is skipped in the search for a checkpoint name", "key", key, "err", err)
			continue
		}
		for _, e := range es {
			if e.Writer == writer && e.Name == name {
				return e, true, nil
			}
		}
	}
	return foldEntry{}, false, nil
}

// pruneFoldLogs deletes the fold logs older than Options.NameRetention.
func (s *Tier) pruneFoldLogs(ctx context.Context) (int, error) {
	keys, err := s.foldLogs(ctx)
	if err != nil {
		return 0, err
	}
	cutoff := s.opts.Now().Add(-s.opts.NameRetention)
	n := 0
	for _, key := range keys {
		if at, _ := foldLogTime(s.opts.Prefix, key); at.Before(cutoff) {
			if err := s.opts.Blobs.Delete(ctx, key); err != nil {
				return n, fmt.Errorf("delete %s of %s: %w", key, s.opts.Blobs.Name(), err)
			}
			n++
		}
	}
	return n, nil
}
