// Package spool keeps the answers a run was charged for: a response body
// that keeps what was read of it (Spool), in memory and past a MiB in an
// unlinked temporary file, so that a page whose load failed after the API
// answered loads again from the answer the API sent (Replay), never asked
// for, and paid for, again. The failover journal (pipeline) holds them.
package spool

import (
	"bytes"
	"errors"
	"io"
	"os"
	"slices"
	"sync"
)

// Spool is a response body that keeps what was read of it. The first spoolMemory
// bytes are kept in memory, the rest in a temporary file that is unlinked
// as soon as it is made (a crash leaves nothing behind), and what the file
// cannot take (the temporary folder is missing, read-only or full) in
// memory too: an answer paid for is never lost for want of a folder.
type Spool struct {
	body io.Reader
	mem  *[]byte
	// pooled says mem is of spoolBuffers (compact makes it not).
	pooled bool
	// head holds what mem held, once compact moved it to disk.
	head     *os.File
	headSize int64
	file     *os.File
	fileSize int64 // bytes in file
	// over is what came after the file failed (or could not be made).
	over []byte
	// fileErr is why the file failed: from then on over keeps the rest.
	fileErr error
	// err is the body's last read error: io.EOF at its end, or the cut.
	err error
}

// spoolMemory is how much of a body a spool keeps in memory while its
// temporary file takes the rest.
const spoolMemory = 1 << 20

// spoolBuffers recycles the memory of spools.
var spoolBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, spoolMemory)
	return &b
}}

func New(body io.Reader) *Spool {
	return &Spool{body: body, mem: spoolBuffers.Get().(*[]byte), pooled: true}
}

// Read reads the body, keeping a copy of what it returns.
func (s *Spool) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.keep(p[:n])
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

func (s *Spool) keep(p []byte) {
	if room := spoolMemory - len(*s.mem); room > 0 {
		k := min(room, len(p))
		*s.mem = append(*s.mem, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	if s.file == nil && s.fileErr == nil {
		f, err := os.CreateTemp("", "etl-page-*")
		if err != nil {
			s.fileErr = err
		} else {
			// Unlinked at once: the open file stays readable, and no
			// crash leaves it behind.
			_ = os.Remove(f.Name())
			s.file = f
		}
	}
	if s.fileErr == nil {
		n, err := s.file.WriteAt(p, s.fileSize)
		s.fileSize += int64(n)
		p = p[n:]
		s.fileErr = err
	}
	s.over = append(s.over, p...)
}

// Replay reads the rest of the body into the copy, and returns a reader
// of the whole body as it came, ending as it ended (io.EOF, or the cut).
func (s *Spool) Replay() io.Reader {
	if s.err == nil {
		buf := make([]byte, 32<<10)
		for s.err == nil {
			_, _ = s.Read(buf)
		}
	}
	var rs []io.Reader
	if s.head != nil {
		rs = append(rs, io.NewSectionReader(s.head, 0, s.headSize))
	}
	rs = append(rs, bytes.NewReader(*s.mem))
	if s.file != nil {
		rs = append(rs, io.NewSectionReader(s.file, 0, s.fileSize))
	}
	rs = append(rs, bytes.NewReader(s.over))
	return &endReader{r: io.MultiReader(rs...), end: s.err}
}

// Compact reads the rest of the body into the copy and gives the memory
// buffer back: a spool kept after its page committed (see journal) holds
// what the answer holds, not a megabyte. What the buffer held goes to a
// temporary file of its own, unlinked at once, unless inMemory (or the
// file cannot be made): then to a copy of its size.
func (s *Spool) Compact(inMemory bool) {
	_ = s.Replay()
	if !s.pooled {
		return
	}
	b := []byte{}
	if inMemory || !s.toDisk() {
		b = slices.Clone(*s.mem)
	}
	*s.mem = (*s.mem)[:0]
	spoolBuffers.Put(s.mem)
	s.mem, s.pooled = &b, false
}

// toDisk writes what mem holds to a new unlinked temporary file (head).
func (s *Spool) toDisk() bool {
	f, err := os.CreateTemp("", "etl-page-*")
	if err != nil {
		return false
	}
	_ = os.Remove(f.Name())
	n, err := f.Write(*s.mem)
	if err != nil {
		_ = f.Close()
		return false
	}
	s.head, s.headSize = f, int64(n)
	return true
}

// InMemory is the bytes of the copy held in memory.
func (s *Spool) InMemory() int64 {
	if s == nil || s.mem == nil {
		return 0
	}
	return int64(len(*s.mem) + len(s.over))
}

// Size is the bytes kept; 0 for a nil spool.
func (s *Spool) Size() int64 {
	if s == nil || s.mem == nil {
		return 0
	}
	return s.headSize + int64(len(*s.mem)) + s.fileSize + int64(len(s.over))
}

// Close lets go of the copy.
func (s *Spool) Close() {
	if s.mem != nil && s.pooled {
		*s.mem = (*s.mem)[:0]
		spoolBuffers.Put(s.mem)
	}
	s.mem = nil
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
	if s.head != nil {
		_ = s.head.Close()
		s.head = nil
	}
	s.over = nil
}

// endReader reads r, then ends with end rather than io.EOF.
type endReader struct {
	r   io.Reader
	end error
}

func (e *endReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if errors.Is(err, io.EOF) {
		return n, e.end
	}
	return n, err
}
