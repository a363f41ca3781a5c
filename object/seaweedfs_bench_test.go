//go:build integration

package object

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// BenchmarkCheckpointVsPutObject: a checkpoint of D destinations of one
// sink into its object on SeaweedFS's S3 gateway, beside the baseline from
// the same run: a plain PutObject of the same object's bytes. b.N is the
// checkpoints (and puts) per D.
func BenchmarkCheckpointVsPutObject(b *testing.B) {
	props := seaweedtest.Start(b).Props()
	endpoint := props["s3.endpoint"]
	client := s3.New(s3.Options{
		Region: props["s3.region"], BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(props["s3.access-key-id"], props["s3.secret-access-key"], ""),
	})
	ctx := context.Background()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bench")}); err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 20)
	for _, dests := range []int{1, 1000} {
		blobs, err := NewS3Blobs(ctx, S3Options{Bucket: "bench", Prefix: fmt.Sprintf("d%d/", dests), Endpoint: endpoint, ForcePathStyle: true, HTTPClient: &http.Client{}})
		if err != nil {
			b.Fatal(err)
		}
		store, err := Open(ctx, Options{Blobs: blobs})
		if err != nil {
			b.Fatal(err)
		}
		ckpt := make([]time.Duration, 0, n)
		for i := range n {
			c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: "pod-a"}
			for d := range dests {
				start := uint64(i * 10)
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: int32(d)},
					Ranges: []coverage.Range{{Start: start, End: start + 5}}})
			}
			t0 := time.Now()
			if err := store.Append(ctx, c); err != nil {
				b.Fatal(err)
			}
			ckpt = append(ckpt, time.Since(t0))
		}
		keys, err := blobs.List(ctx, "")
		if err != nil || len(keys) != 1 {
			b.Fatalf("keys %v, %v", keys, err)
		}
		body, _, err := blobs.Get(ctx, keys[0])
		if err != nil {
			b.Fatal(err)
		}
		put := make([]time.Duration, 0, n)
		for i := range n {
			t0 := time.Now()
			if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String(fmt.Sprintf("raw/d%d/%d", dests, i%2)), Body: bytes.NewReader(body)}); err != nil {
				b.Fatal(err)
			}
			put = append(put, time.Since(t0))
		}
		mc, mp := median(ckpt), median(put)
		b.Logf("D=%d (object %d bytes): checkpoint median %s, PutObject of the same bytes median %s, ratio %.2f (target <= 1.3)",
			dests, len(body), mc.Round(time.Microsecond), mp.Round(time.Microsecond), float64(mc)/float64(mp))
		b.ReportMetric(float64(mc)/float64(mp), fmt.Sprintf("ratio-D%d", dests))
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
