package catalogtest

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
)

// EchoPasswordServer is a PostgreSQL server that asks for the password in
// clear and refuses it with an error quoting it: what a proxy in the way,
// or a server's extension, may send. It returns its address.
func EchoPasswordServer(t testing.TB) string {
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
