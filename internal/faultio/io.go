package faultio

import (
	"context"
	"errors"
	"fmt"
	stdio "io"
	"io/fs"

	icebergio "github.com/apache/iceberg-go/io"
)

// ErrUnsupported: the wrapped IO lacks an optional operation.
var ErrUnsupported = errors.New("faultio: the wrapped IO does not support this operation")

// Wrap returns inner with in's faults: creates, writes and closes of files
// it writes may fail; reads, stats, listings and removals pass through, the
// bytes read counted (Injector.BytesRead).
func (in *Injector) Wrap(inner icebergio.IO) icebergio.IO { return &faultIO{inner: inner, in: in} }

type faultIO struct {
	inner icebergio.IO
	in    *Injector
}

var (
	_ icebergio.WriteFileIO = (*faultIO)(nil)
	_ icebergio.ReadFileIO  = (*faultIO)(nil)
	_ icebergio.StatIO      = (*faultIO)(nil)
	_ icebergio.ListableIO  = (*faultIO)(nil)
	_ icebergio.RemoveAllIO = (*faultIO)(nil)
)

func (f *faultIO) Remove(name string) error { return f.inner.Remove(name) }

// Open opens name for reading; the bytes read through it are counted.
func (f *faultIO) Open(name string) (icebergio.File, error) {
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingFile{File: file, in: f.in, name: name}, nil
}

// countingFile counts the bytes read through it (Injector.BytesRead).
type countingFile struct {
	icebergio.File
	in   *Injector
	name string
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	c.in.countRead(c.name, n)
	return n, err
}

func (c *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.File.ReadAt(p, off)
	c.in.countRead(c.name, n)
	return n, err
}

func (f *faultIO) ReadFile(name string) ([]byte, error) {
	if r, ok := f.inner.(icebergio.ReadFileIO); ok {
		b, err := r.ReadFile(name)
		f.in.countRead(name, len(b))
		return b, err
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	b, err := stdio.ReadAll(file)
	f.in.countRead(name, len(b))
	return b, err
}

func (f *faultIO) Stat(name string) (fs.FileInfo, error) {
	if s, ok := f.inner.(icebergio.StatIO); ok {
		return s.Stat(name)
	}
	file, err := f.inner.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return file.Stat()
}

func (f *faultIO) WalkDir(root string, fn fs.WalkDirFunc) error {
	if l, ok := f.inner.(icebergio.ListableIO); ok {
		return l.WalkDir(root, fn)
	}
	return fmt.Errorf("walking %s: %w", root, ErrUnsupported)
}

func (f *faultIO) RemoveAll(name string) error {
	if r, ok := f.inner.(icebergio.RemoveAllIO); ok {
		return r.RemoveAll(name)
	}
	return f.inner.Remove(name)
}

func (f *faultIO) writer() (icebergio.WriteFileIO, error) {
	w, ok := f.inner.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("writing: %w", ErrUnsupported)
	}
	return w, nil
}

func (f *faultIO) Create(name string) (icebergio.FileWriter, error) {
	w, err := f.writer()
	if err != nil {
		return nil, err
	}
	fail, after, cause := f.in.decide(Create, name)
	if fail && !after {
		return nil, injected(Create, name, false, cause)
	}
	fw, err := w.Create(name)
	if err != nil {
		return nil, err
	}
	if fail {
		// Created, but the caller hears otherwise and never closes it.
		_ = fw.Close()
		return nil, injected(Create, name, true, cause)
	}
	return &faultWriter{inner: fw, name: name, in: f.in}, nil
}

// WriteFile is one create, one write and one close, each of which may fail.
func (f *faultIO) WriteFile(name string, p []byte) error {
	w, err := f.writer()
	if err != nil {
		return err
	}
	for _, op := range []Op{Create, Write} {
		if fail, after, cause := f.in.decide(op, name); fail {
			if after {
				_ = w.WriteFile(name, p)
			}
			return injected(op, name, after, cause)
		}
	}
	fail, after, cause := f.in.decide(Close, name)
	if fail && !after {
		return injected(Close, name, false, cause)
	}
	if err := w.WriteFile(name, p); err != nil {
		return err
	}
	if fail {
		return injected(Close, name, true, cause)
	}
	return nil
}

type faultWriter struct {
	inner icebergio.FileWriter
	name  string
	in    *Injector
}

func (w *faultWriter) Write(p []byte) (int, error) {
	fail, after, cause := w.in.decide(Write, w.name)
	if fail && !after {
		return 0, injected(Write, w.name, false, cause)
	}
	n, err := w.inner.Write(p)
	if err == nil && fail {
		return n, injected(Write, w.name, true, cause)
	}
	return n, err
}

// ReadFrom copies through Write, so that every chunk may fail.
func (w *faultWriter) ReadFrom(r stdio.Reader) (int64, error) {
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
		}
		if errors.Is(err, stdio.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

func (w *faultWriter) Close() error {
	fail, after, cause := w.in.decide(Close, w.name)
	if fail && !after {
		_ = w.inner.Close() // release the handle; the caller hears of a failure
		return injected(Close, w.name, false, cause)
	}
	if err := w.inner.Close(); err != nil {
		return err
	}
	if fail {
		return injected(Close, w.name, true, cause)
	}
	return nil
}

// fsFunc is a table's FileIO factory with the faults applied.
func (in *Injector) fsFunc(inner func(context.Context) (icebergio.IO, error)) func(context.Context) (icebergio.IO, error) {
	return func(ctx context.Context) (icebergio.IO, error) {
		fs, err := inner(ctx)
		if err != nil {
			return nil, err
		}
		if _, done := fs.(*faultIO); done {
			return fs, nil
		}
		return in.Wrap(fs), nil
	}
}
