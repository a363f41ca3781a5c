// Package seaweedtest starts a real SeaweedFS for integration tests: its S3
// gateway with the embedded Iceberg REST catalog ("table buckets"), on
// loopback, in a fresh directory, on free ports. It is for tests only.
//
// The invariant it serves: a test against the REST catalog either runs
// against a real server it has seen answer, or fails saying how to get one;
// it is never silently skipped.
package seaweedtest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Version is the SeaweedFS module version .ci/seaweedfs.sh builds (4.53).
const Version = "v0.0.0-20261109003541-7506e5f91cd6"

const (
	accessKey = "covmirror"
	secretKey = "covmirror-test-secret"
	region    = "us-east-1"
	bucket    = "warehouse"
)

// Binary is the weed binary: $COVMIRROR_WEED, else the build cache of
// .ci/seaweedfs.sh. It fails the test, saying how to build one, if neither
// exists.
func Binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("COVMIRROR_WEED"); bin != "" {
		return bin
	}
	cache := os.Getenv("COVMIRROR_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/tmp" // as .ci/seaweedfs.sh does without HOME
		}
		cache = filepath.Join(home, ".cache", "covmirror")
	}
	bin := filepath.Join(cache, "weed-"+Version, "weed")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("SeaweedFS is not built (%v): run `bash .ci/seaweedfs.sh` (about 10 minutes; `make test-integration` does it), or set COVMIRROR_WEED to a weed binary", err)
	}
	return bin
}

// Server is a running SeaweedFS.
type Server struct {
	bin, dir string
	ports    [6]int // master, volume, filer, admin, s3, iceberg
	cmd      *exec.Cmd
	log      bytes.Buffer
	done     chan struct{}
}

// Start starts SeaweedFS in a fresh directory and waits until its catalog
// and S3 gateway answer. The test's environment gets the S3 credentials,
// which the REST catalog's SigV4 signer reads from there; child processes
// inherit them. It is stopped when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{bin: Binary(t), dir: t.TempDir()}
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_REGION", region)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Cleanup(s.stop)
	// A port found free can be taken before SeaweedFS binds it (another
	// test package's server, an outbound connection): then try others.
	for attempt := 1; ; attempt++ {
		s.ports = freePorts(t)
		err := s.start()
		if err == nil {
			return s
		}
		if !strings.Contains(err.Error(), "address already in use") || attempt == 5 {
			t.Fatal(err)
		}
		t.Logf("SeaweedFS lost a port race (attempt %d); trying other ports", attempt)
		s.log.Reset()
	}
}

// Props are iceberg-go catalog properties for the server's REST catalog
// with its S3 warehouse.
func (s *Server) Props() map[string]string {
	return map[string]string{
		"type":                        "rest",
		"uri":                         "http://127.0.0.1:" + strconv.Itoa(s.ports[5]),
		"warehouse":                   "s3://" + bucket,
		"rest.sigv4-enabled":          "true",
		"rest.signing-region":         region,
		"rest.signing-name":           "s3",
		"s3.endpoint":                 s.s3Endpoint(),
		"s3.region":                   region,
		"s3.access-key-id":            accessKey,
		"s3.secret-access-key":        secretKey,
		"s3.force-virtual-addressing": "false",
	}
}

func (s *Server) s3Endpoint() string { return "http://127.0.0.1:" + strconv.Itoa(s.ports[4]) }

// Kill SIGKILLs the server, as a crashed machine stops.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

// Restart starts the server again on the same directory and ports.
func (s *Server) Restart(t *testing.T) {
	t.Helper()
	s.Kill(t)
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) start() error {
	p := s.ports
	args := []string{"mini", "-dir=" + s.dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-master.telemetry=false", "-webdav=false", "-admin.ui=false", "-admin.port.legacy=0", "-s3.port.lance=0",
		"-master.port=" + strconv.Itoa(p[0]), "-volume.port=" + strconv.Itoa(p[1]), "-filer.port=" + strconv.Itoa(p[2]),
		"-admin.port=" + strconv.Itoa(p[3]), "-s3.port=" + strconv.Itoa(p[4]), "-s3.port.iceberg=" + strconv.Itoa(p[5]),
		"-tableBucket=" + bucket}
	s.cmd = exec.Command(s.bin, args...)
	s.cmd.Dir = s.dir
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	s.cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+accessKey, "AWS_SECRET_ACCESS_KEY="+secretKey)
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("starting SeaweedFS: %w", err)
	}
	s.done = make(chan struct{})
	cmd, done := s.cmd, s.done
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.Now().Add(90 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			s.cmd = nil
			return fmt.Errorf("SeaweedFS exited while starting:\n%s", s.log.String())
		default:
		}
		if err = s.ready(); err == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("SeaweedFS did not become ready in 90 s: %w\n%s", err, s.log.String())
}

// ready: the catalog lists namespaces and the S3 gateway takes a PUT.
func (s *Server) ready() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Props()["uri"]+"/v1/namespaces", nil)
	if err != nil {
		return err
	}
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	creds := aws.Credentials{AccessKeyID: accessKey, SecretAccessKey: secretKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, emptySHA256, "s3", region, time.Now()); err != nil {
		return err
	}
	rsp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = rsp.Body.Close()
	if rsp.StatusCode != http.StatusOK {
		return fmt.Errorf("catalog namespaces: %s", rsp.Status)
	}
	client := s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(s.s3Endpoint()), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(accessKey, secretKey, ""),
	})
	// The table bucket takes only table files: probe with a bucket of its own.
	probe := aws.String("covmirror-ready")
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: probe}); err != nil {
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: probe}); err != nil {
			return err
		}
	}
	_, err = client.PutObject(ctx, &s3.PutObjectInput{Bucket: probe, Key: aws.String("ready"), Body: bytes.NewReader([]byte("ok"))})
	return err
}

func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// freePorts picks six consecutive free ports whose gRPC ports (port +
// 10000, as SeaweedFS derives them) are free too, all below Linux's
// ephemeral range (from 32768), where outbound connections could take them.
func freePorts(t testing.TB) [6]int {
	t.Helper()
	for range 100 {
		base := 12000 + rand.IntN(10700)
		var ports [6]int
		ok := true
		for i := range ports {
			ports[i] = base + i
			if !free(ports[i]) || !free(ports[i]+10000) {
				ok = false
				break
			}
		}
		if ok {
			return ports
		}
	}
	t.Fatal("no six free consecutive ports found")
	return [6]int{}
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// String names the server for test logs.
func (s *Server) String() string { return fmt.Sprintf("SeaweedFS at %s", s.Props()["uri"]) }
