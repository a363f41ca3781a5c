//go:build integration

package pipelinetest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	streamName  = "ORDERS"
	batchHeader = "Batch-Id"
	// ackWait is how long JetStream waits for a killed worker's ack before
	// delivering the message again.
	ackWait = time.Second
)

// broker is an embedded nats-server with JetStream on a free loopback
// port, its store in the test's directory: one stream, subject
// orders.<partition>, and one durable pull consumer per partition with
// explicit acks, so the broker holds each partition's position.
type broker struct {
	srv    *server.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

func startBroker(t *testing.T, ctx context.Context, partitions int) *broker {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server did not become ready")
	}
	b := &broker{srv: srv}
	if b.nc, b.js, err = b.connect(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.nc.Close)
	b.stream, err = b.js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{topic + ".*"},
		Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	for p := range partitions {
		// One message in flight per partition: the worker takes batches in
		// order, and the ack floor is the last batch it acked.
		if _, err := b.js.CreateOrUpdateConsumer(ctx, streamName, jetstream.ConsumerConfig{
			Durable: consumerName(int32(p)), FilterSubject: subject(int32(p)),
			AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxAckPending: 1, MaxDeliver: -1,
		}); err != nil {
			t.Fatalf("create consumer of partition %d: %v", p, err)
		}
	}
	return b
}

func subject(p int32) string      { return topic + "." + strconv.Itoa(int(p)) }
func consumerName(p int32) string { return "part-" + strconv.Itoa(int(p)) }

// connect opens a connection of its own (a worker's: closing it is how a
// killed worker drops the messages it had not acked).
func (b *broker) connect() (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(b.srv.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to nats-server: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// publish sends one batch; the producer numbers batches per partition
// from 0, in the message's Batch-Id header.
func (b *broker) publish(ctx context.Context, p int32, batch uint64) error {
	msg := nats.NewMsg(subject(p))
	msg.Header.Set(batchHeader, strconv.FormatUint(batch, 10))
	msg.Header.Set(nats.MsgIdHdr, subject(p)+"/"+strconv.FormatUint(batch, 10))
	msg.Data = []byte(payload(p, batch))
	_, err := b.js.PublishMsg(ctx, msg)
	return err
}

// payload is what every store holds for a batch, checked at the end.
func payload(p int32, batch uint64) string {
	return fmt.Sprintf("%s/%d/%d", topic, p, batch)
}

// batchOf reads a message's batch id.
func batchOf(h nats.Header) (uint64, error) {
	v := h.Get(batchHeader)
	b, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("message without a valid %s header (%q): %w", batchHeader, v, err)
	}
	return b, nil
}

// info is the broker's state of partition p's consumer.
func (b *broker) info(ctx context.Context, p int32) (*jetstream.ConsumerInfo, error) {
	c, err := b.js.Consumer(ctx, streamName, consumerName(p))
	if err != nil {
		return nil, fmt.Errorf("partition %d: consumer: %w", p, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("partition %d: consumer info: %w", p, err)
	}
	return info, nil
}

// drained is whether every message of partition p was acked.
func (b *broker) drained(ctx context.Context, p int32) (bool, error) {
	info, err := b.info(ctx, p)
	if err != nil {
		return false, err
	}
	return info.NumPending == 0 && info.NumAckPending == 0, nil
}

// ackedExtents are the broker's acked positions as covmirror's extents:
// per partition, the consumer's ack floor (every message up to that stream
// sequence acked) mapped to the batch id the producer put in it, plus one.
func (b *broker) ackedExtents(ctx context.Context, partitions int) ([]coverage.Extent, error) {
	out := make([]coverage.Extent, 0, partitions)
	for p := range int32(partitions) {
		info, err := b.info(ctx, p)
		if err != nil {
			return nil, err
		}
		e := coverage.Extent{Topic: topic, Partition: p}
		if seq := info.AckFloor.Stream; seq > 0 {
			m, err := b.stream.GetMsg(ctx, seq)
			if err != nil {
				return nil, fmt.Errorf("partition %d: the ack floor's message %d: %w", p, seq, err)
			}
			if m.Subject != subject(p) {
				return nil, fmt.Errorf("partition %d: the ack floor's message %d is on %s", p, seq, m.Subject)
			}
			batch, err := batchOf(m.Header)
			if err != nil {
				return nil, err
			}
			e.End = batch + 1
		}
		out = append(out, e)
	}
	return out, nil
}
