package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// spool is a response body that keeps what was read of it, so that a
// page whose load failed after the API answered it (the database
// connection was lost) loads again from the answer the API sent, rather
// than asking for it, and paying for it, again. The first spoolMemory
// bytes are kept in memory, the rest in a temporary file that is unlinked
// as soon as it is made (a crash leaves nothing behind).
type spool struct {
	body io.Reader
	mem  *[]byte
	file *os.File
	size int64 // bytes in file
	// err is the body's last read error: io.EOF at its end, or the cut.
	err error
	// lost is why the copy could not be kept: then there is no replay.
	lost error
}

// spoolMemory is how much of a body a spool keeps in memory.
const spoolMemory = 1 << 20

// spoolBuffers recycles the memory of spools.
var spoolBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, spoolMemory)
	return &b
}}

func newSpool(body io.Reader) *spool {
	return &spool{body: body, mem: spoolBuffers.Get().(*[]byte)}
}

// Read reads the body, keeping a copy of what it returns.
func (s *spool) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.keep(p[:n])
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

func (s *spool) keep(p []byte) {
	if s.lost != nil {
		return
	}
	if room := spoolMemory - len(*s.mem); room > 0 {
		k := min(room, len(p))
		*s.mem = append(*s.mem, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return
	}
	if s.file == nil {
		f, err := os.CreateTemp("", "etl-page-*")
		if err != nil {
			s.lost = err
			return
		}
		// Unlinked at once: the open file stays readable, and no crash
		// leaves it behind.
		_ = os.Remove(f.Name())
		s.file = f
	}
	n, err := s.file.WriteAt(p, s.size)
	s.size += int64(n)
	if err != nil {
		s.lost = err
	}
}

// replay reads the rest of the body into the copy, and returns a reader
// of the whole body as it came, ending as it ended (io.EOF, or the cut).
func (s *spool) replay() (io.Reader, error) {
	if s.err == nil {
		buf := make([]byte, 32<<10)
		for s.err == nil {
			_, _ = s.Read(buf)
		}
	}
	if s.lost != nil {
		return nil, fmt.Errorf("the answer could not be kept to load again: %w", s.lost)
	}
	var r io.Reader = bytes.NewReader(*s.mem)
	if s.file != nil {
		r = io.MultiReader(r, io.NewSectionReader(s.file, 0, s.size))
	}
	return &endReader{r: r, end: s.err}, nil
}

// Close lets go of the copy.
func (s *spool) Close() {
	if s.mem != nil {
		*s.mem = (*s.mem)[:0]
		spoolBuffers.Put(s.mem)
		s.mem = nil
	}
	if s.file != nil {
		_ = s.file.Close()
		s.file = nil
	}
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
