package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/load"
	"github.com/seoetl/etl/transform"
)

// LoadCSVConfig configures LoadCSV.
type LoadCSVConfig struct {
	// Pool connects to the warehouse (required).
	Pool *pgxpool.Pool
	// Loader writes the pages; default load.New over Pool.
	Loader *load.Loader
	// Endpoint is the per-target endpoint whose CSV answer is loaded
	// (required).
	Endpoint *catalog.Endpoint
	// TargetID is the target the rows are about, a targets.target_id
	// (required).
	TargetID int64
	// Month is the month the rows describe; default the month of Now.
	Month time.Time
	// PageRows is how many rows each transaction loads, as a run loads one
	// page of that limit; default the endpoint's default limit.
	PageRows int
	// BatchRows bounds the rows of one Arrow record; default transform's.
	BatchRows int
	// Allocator allocates Arrow memory; default memory.DefaultAllocator.
	Allocator memory.Allocator
	// Now is the clock of observed_at (read once per page); default
	// time.Now.
	Now func() time.Time
	// Logger receives the decoder's debug lines; default discards.
	Logger *slog.Logger
}

func (c LoadCSVConfig) withDefaults() (LoadCSVConfig, error) {
	if c.Pool == nil || c.Endpoint == nil {
		return c, errors.New("pipeline: LoadCSVConfig needs a Pool and an Endpoint")
	}
	if !c.Endpoint.PerTarget || !c.Endpoint.AllowsCSV() {
		return c, fmt.Errorf("pipeline: LoadCSV loads a per-target endpoint with a CSV answer, not %s", c.Endpoint.Name)
	}
	if c.TargetID == 0 {
		return c, errors.New("pipeline: LoadCSVConfig needs the TargetID the rows are about")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Month.IsZero() {
		c.Month = c.Now()
	}
	c.Month = load.MonthStart(c.Month)
	if c.PageRows == 0 {
		c.PageRows = c.Endpoint.DefaultLimit
	}
	if c.PageRows < 1 {
		return c, fmt.Errorf("pipeline: PageRows must be at least 1, got %d", c.PageRows)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Allocator == nil {
		c.Allocator = memory.DefaultAllocator
	}
	if c.Loader == nil {
		l, err := load.New(load.Config{Pool: c.Pool, Logger: c.Logger})
		if err != nil {
			return c, err
		}
		c.Loader = l
	}
	return c, nil
}

// LoadCSVResult is what LoadCSV did.
type LoadCSVResult struct {
	Pages    int
	Rows     int64 // rows read (good and rejected)
	Rejected int64 // rows quarantined
	Load     load.Result
}

// LoadCSV loads a saved CSV answer of an endpoint, one header and its rows,
// the way a run loads the pages of a task: decoded by transform into Arrow
// records, staged and upserted by load (stagePage, the code of a run's
// page), rejects quarantined, in one transaction per PageRows good rows.
// It is the loading part of a run alone: no request, ledger, checkpoint or
// run record. Benchmarks use it to time the pipeline on the same bytes as
// psql's COPY.
func LoadCSV(ctx context.Context, r io.Reader, cfg LoadCSVConfig) (LoadCSVResult, error) {
	var res LoadCSVResult
	cfg, err := cfg.withDefaults()
	if err != nil {
		return res, err
	}
	ep := cfg.Endpoint
	dec, err := transform.NewCSVDecoder(r, ep, transform.Options{
		Allocator: cfg.Allocator, BatchRows: cfg.BatchRows, Logger: cfg.Logger, Required: ep.Required()})
	if err != nil {
		return res, fmt.Errorf("decoding %s: %w", ep.Name, err)
	}
	defer dec.Release()
	pages := &pageReader{dec: dec}
	defer pages.release()
	holds, err := cfg.Loader.Holds(ctx, ep, cfg.TargetID, cfg.Month)
	if err != nil {
		return res, err
	}
	for {
		if err := pages.fill(ctx); err != nil {
			return res, fmt.Errorf("decoding %s: %w", ep.Name, err)
		}
		if pages.next == nil {
			return res, nil
		}
		pages.left = cfg.PageRows
		observed := cfg.Now().UTC()
		var rows int
		var loaded load.Result
		var rejected []load.Rejected
		err := pgx.BeginFunc(ctx, cfg.Pool, func(tx pgx.Tx) error {
			page, err := cfg.Loader.NewPage(ctx, tx, ep)
			if err != nil {
				return err
			}
			page.FirstLoad = !holds
			var cut error
			rows, loaded, cut, err = stagePage(ctx, pages, page, load.Batch{Endpoint: ep, TargetID: cfg.TargetID,
				Month: cfg.Month, ObservedAt: observed}, func(rj transform.Reject) {
				rejected = append(rejected, load.Rejected{Endpoint: ep.Name, TargetID: cfg.TargetID, Request: "LoadCSV",
					Line: rj.Line, Raw: rj.Raw, Reason: rj.Reason, ObservedAt: observed})
			})
			if err == nil && cut != nil {
				err = fmt.Errorf("decoding %s: %w", ep.Name, cut) // a file has no next request
			}
			if err != nil {
				return err
			}
			return cfg.Loader.Quarantine(ctx, tx, rejected)
		})
		if err != nil {
			return res, err
		}
		res.Pages++
		res.Rows += int64(rows + len(rejected))
		res.Rejected += int64(len(rejected))
		res.Load = res.Load.Add(loaded)
	}
}

// batchReader is what stagePage reads: transform.Decoder's Next.
type batchReader interface {
	Next(ctx context.Context) (arrow.Record, []transform.Reject, error)
}

// stagePage stages every record of dec into page, b with each record, hands
// each reject to reject, and upserts the page: the loading part of a page
// of a run (Runner.page) and of LoadCSV. It returns the good rows staged.
// The page's copy reads dec as it sends the rows (load.Page.Copy), so the
// decoding overlaps the server's work.
//
// A body cut off mid-answer (transform.ErrCut) still loads the complete
// rows that came before the cut: they are valid and were paid for. cut is
// then the decoder's error; err is nil unless loading failed.
func stagePage(ctx context.Context, dec batchReader, page *load.Page, b load.Batch, reject func(transform.Reject)) (rows int, loaded load.Result, cut, err error) {
	recs := &pageRecords{dec: dec, endpoint: b.Endpoint.Name, reject: reject}
	if err := page.Copy(ctx, b, recs); err != nil {
		return recs.rows, load.Result{}, nil, err
	}
	loaded, err = page.Upsert(ctx)
	return recs.rows, loaded, recs.cut, err
}

// pageRecords is a page's records for load.Page.Copy: the decoder's, with
// its rejects handed on and a cut body ending the page (cut).
type pageRecords struct {
	dec      batchReader
	endpoint string
	reject   func(transform.Reject)
	rows     int   // good rows read
	cut      error // transform.ErrCut, wrapped
}

func (p *pageRecords) Next(ctx context.Context) (arrow.Record, error) {
	rec, rejects, err := p.dec.Next(ctx)
	for _, rj := range rejects {
		p.reject(rj)
	}
	switch {
	case errors.Is(err, transform.ErrCut):
		p.cut = err
		return nil, io.EOF
	case errors.Is(err, io.EOF):
		return nil, io.EOF
	case err != nil:
		return nil, fmt.Errorf("decoding %s: %w", p.endpoint, err)
	}
	p.rows += int(rec.NumRows())
	return rec, nil
}

// pageReader cuts a decoder's records into pages: Next returns io.EOF once
// the page holds left good rows, slicing a record at the boundary and
// keeping its rest for the next page.
type pageReader struct {
	dec     transform.Decoder
	left    int                // good rows the page may still take
	next    arrow.Record       // the record Next returns next; nil when none is read
	rejects []transform.Reject // the rejects that came with next
	eof     bool               // dec returned io.EOF
}

// fill reads the decoder's next record unless one is waiting or the
// decoder is done.
func (p *pageReader) fill(ctx context.Context) error {
	if p.next != nil || p.eof {
		return nil
	}
	rec, rejects, err := p.dec.Next(ctx)
	if errors.Is(err, io.EOF) {
		p.eof = true
		return nil
	}
	if err != nil {
		return err
	}
	p.next, p.rejects = rec, rejects
	return nil
}

func (p *pageReader) Next(ctx context.Context) (arrow.Record, []transform.Reject, error) {
	if p.left <= 0 {
		return nil, nil, io.EOF
	}
	if err := p.fill(ctx); err != nil {
		return nil, nil, err
	}
	if p.next == nil {
		return nil, nil, io.EOF
	}
	rec, rejects := p.next, p.rejects
	p.next, p.rejects = nil, nil
	if n := int(rec.NumRows()); n > p.left {
		head, rest := rec.NewSlice(0, int64(p.left)), rec.NewSlice(int64(p.left), int64(n))
		rec.Release()
		rec, p.next = head, rest
	}
	p.left -= int(rec.NumRows())
	return rec, rejects, nil
}

// release frees a record read and not handed out.
func (p *pageReader) release() {
	if p.next != nil {
		p.next.Release()
		p.next = nil
	}
}
