package progress

import (
	"io"
	"sync"
)

// LogWriter is the log's writer, which a live progress display takes
// over while it is drawn (so log lines are written above it). Its methods
// are safe for concurrent use.
type LogWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLogWriter returns the log's writer, writing to w until a display
// takes it over.
func NewLogWriter(w io.Writer) *LogWriter { return &LogWriter{w: w} }

// Write writes b to the current writer.
func (s *LogWriter) Write(b []byte) (int, error) {
	return s.current().Write(b)
}

// current is the writer now: the log's, or a display's.
func (s *LogWriter) current() io.Writer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w
}

// Swap makes w the writer until the returned func restores the old one.
func (s *LogWriter) Swap(w io.Writer) (restore func()) {
	s.mu.Lock()
	old := s.w
	s.w = w
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.w = old
		s.mu.Unlock()
	}
}

// abandoner is a writer that draws something it must end when the process
// stops at once (a live progress display).
type abandoner interface {
	// abandon writes msg and ends the display for good, with a last line
	// that says where things stood.
	abandon(msg string)
}

// Abandon writes msg, the last words of a process that stops at once,
// through the current writer: a live progress display writes it and ends
// itself.
func (s *LogWriter) Abandon(msg string) {
	w := s.current()
	if a, ok := w.(abandoner); ok {
		a.abandon(msg)
		return
	}
	_, _ = io.WriteString(w, msg)
}

// interrupter is a writer that shows the state of something a first
// interrupt stops (a live progress display).
type interrupter interface {
	// interrupt writes msg and shows that what it displays is stopping.
	interrupt(msg string)
}

// Interrupt writes msg, the notice of a first interrupt, through the
// current writer: a live progress display writes it above itself and
// shows that the run is stopping.
func (s *LogWriter) Interrupt(msg string) {
	w := s.current()
	if i, ok := w.(interrupter); ok {
		i.interrupt(msg)
		return
	}
	_, _ = io.WriteString(w, msg)
}
