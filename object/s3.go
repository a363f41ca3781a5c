package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/covmirror/covmirror/internal/redact"
)

// S3Options says where an S3Blobs lives and how to reach it. Credentials
// are never here: they come from the AWS default chain (the environment,
// the shared config and credentials files, web identity, the instance or
// container role).
type S3Options struct {
	// Bucket is the bucket; it must exist. Required.
	Bucket string
	// Prefix is prepended to every key; a "/" is added when it does not end
	// in one. Zero value: keys at the bucket's root.
	Prefix string
	// Endpoint is the S3 endpoint URL ("http://127.0.0.1:8333"). Zero
	// value: AWS S3, resolved from the region.
	Endpoint string
	// Region signs requests. Zero value: the AWS default chain's
	// (AWS_REGION, the profile), else us-east-1, which S3-compatible
	// stores accept.
	Region string
	// ForcePathStyle addresses the bucket in the path (endpoint/bucket/key)
	// rather than the host name, as most S3-compatible stores need. Zero
	// value: virtual-hosted style, as AWS S3 prefers.
	ForcePathStyle bool
	// HTTPClient carries the requests; tests put a fault-injecting
	// transport in it. Zero value: the SDK's default client.
	HTTPClient *http.Client
}

// S3Blobs is Blobs on an S3 bucket under a prefix, with S3's conditional
// writes: Put sends If-Match with the version it was given, or
// If-None-Match: * to create. A version is the ETag exactly as S3 returned
// it, quotes included.
type S3Blobs struct {
	client *s3.Client
	bucket string
	prefix string
}

// EnsureDefaults adds the "/" a non-empty Prefix needs. The other zero
// values are resolved by the AWS default chain when the client is made.
func (o *S3Options) EnsureDefaults() {
	if o.Prefix != "" && !strings.HasSuffix(o.Prefix, "/") {
		o.Prefix += "/"
	}
}

// Validate reports options no client can be made of: a missing bucket, or
// an endpoint that is not an absolute http(s) URL.
func (o *S3Options) Validate() error {
	if o.Bucket == "" {
		return errors.New("object: S3 needs a bucket")
	}
	if o.Endpoint != "" {
		// Named as redact.URL shows it: the SDK takes its credentials
		// from the AWS environment, never from the endpoint's user
		// information, query or fragment, which are refused unshown.
		u, err := url.Parse(o.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || redact.StrayAt(o.Endpoint) {
			return fmt.Errorf("object: S3 endpoint %q is not an http:// or https:// URL with a host", redact.URL(o.Endpoint))
		}
		if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return fmt.Errorf("object: S3 endpoint %q has user information, a query or a fragment (not shown: it may hold a credential): give the scheme, host and port; credentials come from the AWS environment", redact.URL(o.Endpoint))
		}
	}
	return nil
}

// NewS3Blobs returns S3Blobs for opts, with credentials from the AWS
// default chain. It does not contact the store; CheckStore does.
func NewS3Blobs(ctx context.Context, opts S3Options) (*S3Blobs, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var load []func(*config.LoadOptions) error
	if opts.Region != "" {
		load = append(load, config.WithRegion(opts.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("object: loading the AWS configuration for s3://%s: %w", opts.Bucket, err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		o.UsePathStyle = opts.ForcePathStyle
		if opts.HTTPClient != nil {
			o.HTTPClient = opts.HTTPClient
		}
		// Objects carry their own checksum (the format's), and several
		// S3-compatible stores reject the SDK's default CRC headers.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &S3Blobs{client: client, bucket: opts.Bucket, prefix: opts.Prefix}, nil
}

// Name is the s3:// URL of the bucket and prefix.
func (b *S3Blobs) Name() string { return "s3://" + b.bucket + "/" + b.prefix }

func (b *S3Blobs) where(key string) string { return "s3://" + b.bucket + "/" + b.prefix + key }

// Get returns the object's bytes and ETag; ErrNotFound for NoSuchKey. The
// SDK retries transient failures: a read is idempotent.
func (b *S3Blobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key)})
	if err != nil {
		if missingKey(err) {
			return nil, "", fmt.Errorf("object: get %s: %w", b.where(key), ErrNotFound)
		}
		return nil, "", fmt.Errorf("object: get %s: %w", b.where(key), err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", fmt.Errorf("object: reading %s: %w", b.where(key), err)
	}
	if out.ETag == nil || *out.ETag == "" {
		return nil, "", fmt.Errorf("object: get %s: the store returned no ETag, so no conditional write can follow", b.where(key))
	}
	return data, *out.ETag, nil
}

// Put writes data under key if the object is at ifMatch, or creates it
// when ifMatch is empty, and returns the new ETag. A refused precondition
// is ErrPrecondition; any other error leaves the outcome unknown.
//
// The SDK does not retry a Put: a retry of a write that landed but whose
// answer was lost would be refused (the object is no longer at ifMatch),
// and that 412 would claim nothing was written when this very write was.
// The Tier above retries by re-reading and re-merging instead.
func (b *S3Blobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	in := &s3.PutObjectInput{
		Bucket: &b.bucket, Key: aws.String(b.prefix + key),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	}
	cond := "If-None-Match: *"
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
		cond = "If-Match: " + ifMatch
	} else {
		in.IfNoneMatch = aws.String("*")
	}
	out, err := b.client.PutObject(ctx, in, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
	if err != nil {
		if preconditionFailed(err, ifMatch != "") {
			return "", fmt.Errorf("object: put %s (%s): %w", b.where(key), cond, ErrPrecondition)
		}
		return "", fmt.Errorf("object: put %s (%s), outcome unknown (the write may have been applied): %w", b.where(key), cond, err)
	}
	if out.ETag == nil || *out.ETag == "" {
		return "", fmt.Errorf("object: put %s (%s) was applied but the store returned no ETag", b.where(key), cond)
	}
	return *out.ETag, nil
}

// List returns the keys under prefix, relative to the Blobs' prefix, in
// lexical order.
func (b *S3Blobs) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	pages := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: aws.String(b.prefix + prefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("object: list %s: %w", b.where(prefix), err)
		}
		for _, o := range page.Contents {
			if o.Key != nil && strings.HasPrefix(*o.Key, b.prefix) {
				keys = append(keys, strings.TrimPrefix(*o.Key, b.prefix))
			}
		}
	}
	// S3 lists in UTF-8 byte order; some compatible stores may not.
	slices.Sort(keys)
	return keys, nil
}

// Delete removes key; a missing key is not an error.
func (b *S3Blobs) Delete(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: aws.String(b.prefix + key)})
	if err != nil && !missingKey(err) {
		return fmt.Errorf("object: delete %s: %w", b.where(key), err)
	}
	return nil
}

// status and code of an S3 error answer; 0 and "" when there was none (a
// transport failure, a timeout).
func answer(err error) (status int, code string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

// missingKey: the key is not there (NoSuchKey, or a bodiless 404, whose
// code the SDK derives from the status as "NotFound"). A missing bucket is
// not a missing key.
func missingKey(err error) bool {
	status, code := answer(err)
	return status == http.StatusNotFound && (code == "NoSuchKey" || code == "NotFound")
}

// preconditionFailed: the store refused the write's precondition, so it
// wrote nothing. 412 (any store), S3's 409 ConditionalRequestConflict (a
// concurrent conditional write), and, under If-Match, a missing key
// however answered (S3: 404 NoSuchKey; others: 412).
func preconditionFailed(err error, ifMatch bool) bool {
	status, code := answer(err)
	switch {
	case status == http.StatusPreconditionFailed:
		return true
	case status == http.StatusConflict:
		return code == "ConditionalRequestConflict"
	case ifMatch && status == http.StatusNotFound:
		return code == "NoSuchKey" || code == "NotFound"
	}
	return false
}
