package object

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// s3Stub is an in-process S3 stand-in for the tests that run without
// SeaweedFS: path-style PutObject (with If-Match / If-None-Match),
// GetObject, DeleteObject and ListObjectsV2 on one bucket, answering as
// S3 does (XML error bodies, quoted MD5 ETags, pages of pageSize keys).
// The integration tests run the same checks against a real SeaweedFS.
type s3Stub struct {
	bucket string
	// missingIfMatch is the status for If-Match on a missing key: S3's 404
	// NoSuchKey, or 412 as some stores answer.
	missingIfMatch int
	// broken ignores every precondition: the defect CheckStore must catch.
	broken   bool
	pageSize int

	mu      sync.Mutex
	objects map[string][]byte
}

// newS3Stub starts a stub and returns its endpoint.
func newS3Stub(t testing.TB, stub *s3Stub) string {
	t.Helper()
	if stub.bucket == "" {
		stub.bucket = "bucket"
	}
	if stub.missingIfMatch == 0 {
		stub.missingIfMatch = http.StatusNotFound
	}
	if stub.pageSize == 0 {
		stub.pageSize = 2
	}
	stub.objects = map[string][]byte{}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	return srv.URL
}

func etagOf(data []byte) string {
	sum := md5.Sum(data)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>stub</RequestId></Error>`, code, code)
}

func (s *s3Stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if bucket != s.bucket {
		s3Error(w, http.StatusNotFound, "NoSuchBucket")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodGet && key == "" && r.URL.Query().Get("list-type") == "2":
		s.list(w, r)
	case r.Method == http.MethodGet:
		data, ok := s.objects[key]
		if !ok {
			s3Error(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		w.Header().Set("ETag", etagOf(data))
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		_, _ = w.Write(data)
	case r.Method == http.MethodPut:
		data, err := io.ReadAll(r.Body)
		if err != nil {
			s3Error(w, http.StatusBadRequest, "IncompleteBody")
			return
		}
		old, exists := s.objects[key]
		if !s.broken {
			if m := r.Header.Get("If-Match"); m != "" {
				if !exists {
					code := "NoSuchKey"
					if s.missingIfMatch == http.StatusPreconditionFailed {
						code = "PreconditionFailed"
					}
					s3Error(w, s.missingIfMatch, code)
					return
				}
				if m != etagOf(old) {
					s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
					return
				}
			}
			if r.Header.Get("If-None-Match") == "*" && exists {
				s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
				return
			}
		}
		s.objects[key] = data
		w.Header().Set("ETag", etagOf(data))
	case r.Method == http.MethodDelete:
		delete(s.objects, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		s3Error(w, http.StatusNotImplemented, "NotImplemented")
	}
}

type listResult struct {
	XMLName               xml.Name `xml:"ListBucketResult"`
	Name                  string
	Prefix                string
	KeyCount              int
	IsTruncated           bool
	NextContinuationToken string `xml:",omitempty"`
	Contents              []struct{ Key string }
}

// list pages by continuation token, which is the last key of the page.
func (s *s3Stub) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	prefix, after := q.Get("prefix"), q.Get("continuation-token")
	var keys []string
	for k := range s.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	res := listResult{Name: s.bucket, Prefix: prefix}
	if len(keys) > s.pageSize {
		keys = keys[:s.pageSize]
		res.IsTruncated, res.NextContinuationToken = true, keys[len(keys)-1]
	}
	for _, k := range keys {
		res.Contents = append(res.Contents, struct{ Key string }{k})
	}
	res.KeyCount = len(keys)
	w.Header().Set("Content-Type", "application/xml")
	_ = xml.NewEncoder(w).Encode(res)
}
