//go:build integration

package object

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/internal/seaweedtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// seaweedBucket starts SeaweedFS and creates a plain bucket on its S3
// gateway (its warehouse bucket takes only table files), returning the
// endpoint. Start put the gateway's credentials in the environment, where
// S3Blobs finds them.
func seaweedBucket(t *testing.T, bucket string) string {
	t.Helper()
	props := seaweedtest.Start(t).Props()
	endpoint := props["s3.endpoint"]
	client := s3.New(s3.Options{
		Region: props["s3.region"], BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(props["s3.access-key-id"], props["s3.secret-access-key"], ""),
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("creating bucket %s on SeaweedFS: %v", bucket, err)
	}
	return endpoint
}

// TestSeaweedFSBlobs: S3Blobs' Get/Put/List/Delete and conditional
// semantics on a real SeaweedFS, and the classification of each injected
// HTTP fault against what SeaweedFS really applied.
func TestSeaweedFSBlobs(t *testing.T) {
	endpoint := seaweedBucket(t, "coverage")
	clean := openS3(t, endpoint, "coverage", "tier", nil)
	blobsBasics(t, clean, "basics/")
	// Which of the two answers to If-Match on a missing key this store gives.
	_, err := clean.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: aws.String("coverage"), Key: aws.String("tier/absent"), Body: strings.NewReader("x"), IfMatch: aws.String(`"0"`),
	})
	status, code := answer(err)
	t.Logf("SeaweedFS answers If-Match on a missing key with %d %s", status, code)
	if !preconditionFailed(err, true) {
		t.Fatalf("If-Match on a missing key: %v", err)
	}
	putFaultTable(t, func(rt http.RoundTripper) Blobs { return openS3(t, endpoint, "coverage", "tier", rt) }, clean, "faults/")
}

// TestSeaweedFSCheckStore runs CheckStore against SeaweedFS several times
// (a race's outcome varies from run to run) and logs every report.
func TestSeaweedFSCheckStore(t *testing.T) {
	endpoint := seaweedBucket(t, "coverage")
	b := openS3(t, endpoint, "coverage", "tier", nil)
	for range 5 {
		mustPass(t, b, 32)
	}
}

// TestSeaweedFSTierConformance runs the durable tiers' conformance suite on
// sink objects in a real SeaweedFS bucket: each scenario under a prefix of
// its own, each client a Tier with its own S3 client.
func TestSeaweedFSTierConformance(t *testing.T) {
	endpoint := seaweedBucket(t, "conformance")
	n := 0
	durabletest.Run(t, durabletest.Harness{Light: testing.Short(), New: func(t *testing.T) func(t *testing.T) durable.Tier {
		n++
		prefix := fmt.Sprintf("scenario-%d/", n)
		return func(t *testing.T) durable.Tier {
			s, err := Open(context.Background(), Options{Blobs: openS3(t, endpoint, "conformance", prefix, nil)})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}})
}

// TestSeaweedFSDeltasConformance runs the conformance suite on the deltas
// layout in a real SeaweedFS bucket, each client folding after some of its
// appends, so that folds race appends and each other on real S3.
func TestSeaweedFSDeltasConformance(t *testing.T) {
	endpoint := seaweedBucket(t, "deltas")
	seed := testseed.Seed(t)
	n := 0
	durabletest.Run(t, durabletest.Harness{Light: testing.Short(), New: func(t *testing.T) func(t *testing.T) durable.Tier {
		n++
		prefix := fmt.Sprintf("scenario-%d/", n)
		clients := uint64(0)
		return func(t *testing.T) durable.Tier {
			clients++
			s, err := Open(context.Background(), Options{Blobs: openS3(t, endpoint, "deltas", prefix, nil), Layout: LayoutDeltas})
			if err != nil {
				t.Fatal(err)
			}
			return &foldingTier{Tier: s, t: t, rng: rand.New(rand.NewPCG(seed, uint64(n)<<16|clients))}
		}
	}})
}
