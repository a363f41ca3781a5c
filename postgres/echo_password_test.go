package postgres

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
)

// echoPasswordServer is a PostgreSQL server that asks for the password in
// clear and refuses it with an error quoting it: what a proxy in the way,
// or a server's extension, may send. It returns its address.
func echoPasswordServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	msg := func(typ byte, body []byte) []byte {
		out := []byte{typ, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(out[1:], uint32(len(body)+4))
		return append(out, body...)
	}
	read := func(c net.Conn, typed bool) ([]byte, error) {
		head := make([]byte, 4)
		if typed {
			head = make([]byte, 5)
		}
		if _, err := io.ReadFull(c, head); err != nil {
			return nil, err
		}
		body := make([]byte, binary.BigEndian.Uint32(head[len(head)-4:])-4)
		_, err := io.ReadFull(c, body)
		return body, err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				body, err := read(c, false)
				if err == nil && binary.BigEndian.Uint32(body) == 80877103 { // SSLRequest: no
					_, _ = c.Write([]byte{'N'})
					_, err = read(c, false)
				}
				if err != nil {
					return
				}
				_, _ = c.Write(msg('R', []byte{0, 0, 0, 3})) // cleartext password
				pw, err := read(c, true)
				if err != nil {
					return
				}
				pw = []byte(strings.TrimRight(string(pw), "\x00"))
				text := "password authentication failed: got " + string(pw) + "\x00"
				_, _ = c.Write(msg('E', []byte("SFATAL\x00VFATAL\x00C28P01\x00M"+text+"Ddetail "+string(pw)+"\x00\x00")))
			}()
		}
	}()
	return ln.Addr().String()
}

// TestOpenNeverPrintsAnEchoedPassword: a server that quotes the password
// it was sent in its error: Open's error, as every output prints it, holds
// no piece of it, whichever way the connection string gives it.
func TestOpenNeverPrintsAnEchoedPassword(t *testing.T) {
	const secret = "Xe5sEchoedPassword"
	addr := echoPasswordServer(t)
	host, port, _ := net.SplitHostPort(addr)
	for _, url := range []string{
		"postgres://u:" + secret + "@" + addr + "/db?sslmode=disable",
		"postgres://u@" + addr + "/db?sslmode=disable&password=" + secret,
		"host=" + host + " port=" + port + " user=u password='a b" + secret + "' sslmode=disable",
	} {
		_, err := Open(ctx, Options{URL: url, Schema: "covmirror", MaxAttempts: 1})
		if err == nil {
			t.Fatal("Open succeeded against a server that refuses every password")
		}
		if !strings.Contains(err.Error(), "password authentication failed") {
			t.Fatalf("the server's message is not in the error, so the test shows nothing: %v", err)
		}
		if strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("the password is in the error: %v", err)
		}
	}
}
