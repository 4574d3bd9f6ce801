package transform

import (
	"errors"
	"fmt"
	"io"
)

// ErrCut is matched (errors.Is) by the error of a decoder whose body
// failed to read before its end: the connection broke (io.ErrUnexpectedEOF
// from a cut chunked body, a reset), the body stalled (extract.ErrIdle),
// any read error but io.EOF. The error wraps the read error and says how
// many complete rows of the body the decoder delivered before the cut.
//
// A cut loses no complete row: Next first returns, as usual and with a nil
// error, every row whose end was read before the cut (a CSV row whose line
// break was read, a JSON item of data whose closing brace was read), good
// or rejected, and only then ErrCut, on every call. The row the cut fell
// in is neither returned nor rejected: asked for again, it comes whole.
// Rows and Rejected count the complete rows only, so Rows()+Rejected() is
// how far into the answer the next request may start. A cut before the
// CSV header's line break or before the JSON data began fails
// NewCSVDecoder or NewJSONDecoder with ErrCut (0 rows). A JSON body cut
// after the closing brace of its envelope is whole: nothing of it is
// missing, and Next ends with io.EOF.
//
// At a clean end of the body (io.EOF) a CSV row without a line break is
// complete; at a cut it is not, as "abc;12" may be the start of
// "abc;123".
var ErrCut = errors.New("transform: the body was cut")

// bodyReader is the body as a decoder reads it. It keeps the first read
// error other than io.EOF, the cut, and returns it again on every later
// read (a body may not), so that the decoder tells a cut from the end of
// the body and from its own errors.
type bodyReader struct {
	r   io.Reader
	err error // the cut: the first read error other than io.EOF
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// cut reports whether err, an error of a decoder's reading, is the cut.
func (b *bodyReader) cut(err error) bool { return b.err != nil && errors.Is(err, b.err) }

// cutError is the error of a body that was cut after rows complete rows,
// rejected of them rejected.
func (b *bodyReader) cutError(body string, rows, rejected int64) error {
	return &cutError{body: body, rows: rows, rejected: rejected, err: b.err}
}

// cutError is an ErrCut.
type cutError struct {
	body           string // which body, as in "the links CSV body"
	rows, rejected int64  // complete rows delivered, and the rejects among them
	err            error  // the read error
}

func (e *cutError) Error() string {
	rows := "rows"
	if e.rows == 1 {
		rows = "row"
	}
	rejected := ""
	if e.rejected > 0 {
		rejected = fmt.Sprintf(" (%d rejected)", e.rejected)
	}
	return fmt.Sprintf("transform: %s was cut after %d complete %s%s: %v", e.body, e.rows, rows, rejected, e.err)
}

func (e *cutError) Is(target error) bool { return target == ErrCut }

func (e *cutError) Unwrap() error { return e.err }
