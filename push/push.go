package push

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/catalog"
	"github.com/seoetl/etl/extract"
	"github.com/seoetl/etl/listing"
)

// The outcomes of an item (listing_push_items.outcome).
const (
	Planned   = "PLANNED"
	Sent      = "SENT"
	Updated   = "UPDATED"
	Failed    = "FAILED"
	Refused   = "REFUSED"
	Unchanged = "UNCHANGED"
	Waiting   = "WAITING"
	NotSent   = "NOT_SENT"
	// Kept is an undo's item it left alone: another writer changed the
	// location since the push undone, or no version from before that push
	// is stored (migration 0026).
	Kept = "KEPT"
)

// Codes of this package, for items the provider never saw or whose
// answer it did not give.
const (
	// CodeDuplicateID refuses the rows of a location id the relation
	// holds more than once.
	CodeDuplicateID = "DUPLICATE_ID"
	// CodeNotInRelation refuses an --only id the relation does not hold.
	CodeNotInRelation = "NOT_IN_RELATION"
	// CodeNotUpdated refuses an undo's --only id that the push undone
	// did not update (not recorded).
	CodeNotUpdated = "NOT_UPDATED_BY_PUSH"
	// CodeNUL refuses a location whose hours, from a json column, hold
	// the character \u0000, which the warehouse cannot record.
	CodeNUL = "NUL_CHARACTER"
	// CodeNotApplied fails an item whose request left doubt (no answer, a
	// 5xx) and whose location, read back, is not what was sent: not
	// applied; transient.
	CodeNotApplied = "NOT_APPLIED"
	// CodeNoResult fails an item a bulk answer did not report on, read
	// back and found not applied; transient.
	CodeNoResult = "NO_RESULT"
)

// DefaultRounds is Options.Rounds when zero.
const DefaultRounds = 3

// MinConns is the fewest connections Config.Pool must allow: a push holds
// one for its account's lock and records its items on another.
const MinConns = 2

// Config configures Run.
type Config struct {
	// Pool is the warehouse (migrations up to 0026), of at least MinConns
	// connections. Required.
	Pool *pgxpool.Pool
	// Client calls the listing endpoints of the account (its bearer
	// token); its clock paces the requests. Required unless dry run.
	Client *extract.Client
	// Account is the account pushed (accounts.name); its pulled locations
	// are the base of the diff. Required.
	Account string
	// Relation names the table or view of the desired locations:
	// [schema.]name, each part a plain or double-quoted SQL identifier.
	// Required.
	Relation string
	// Now is the time recorded and the current date of the checks
	// (reopenDate). Default time.Now.
	Now func() time.Time
	// Logger receives a line per request and per push (never a token).
	// Default: discarded.
	Logger *slog.Logger
	// Progress, when set, is called once the push is planned and
	// recorded, before its first request, then after each request, with
	// the counts so far.
	Progress func(Progress)
}

func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate(dry bool) error {
	switch {
	case c.Pool == nil:
		return errors.New("push: no warehouse (Config.Pool)")
	case c.Pool.Config().MaxConns < MinConns:
		return fmt.Errorf("push: the warehouse pool allows %d connection; a push needs at least %d (one holds the account's lock, another records)",
			c.Pool.Config().MaxConns, MinConns)
	case strings.TrimSpace(c.Account) == "":
		return errors.New("push: no account: name the account whose locations to push")
	case strings.TrimSpace(c.Relation) == "":
		return errors.New("push: no relation: name the table or view of the desired locations")
	case c.Client == nil && !dry:
		return errors.New("push: no client of the account (Config.Client)")
	}
	return nil
}

// Options are the choices of one push.
type Options struct {
	// DryRun reads, diffs, checks and plans, and sends and records
	// nothing.
	DryRun bool
	// Only limits the push to these location ids; empty: every row.
	Only []string
	// Rounds bounds the rounds of a push: the first sends the plan,
	// each further one the items that failed transiently in the one
	// before. Default DefaultRounds (3).
	Rounds int
}

// Progress are the counts of a push so far.
type Progress struct {
	// PushID is the push's row in listing_pushes.
	PushID int64
	// Requests are the update requests sent so far; PlannedRequests those
	// the plans of the rounds so far make (the first round's, plus a
	// retry round's once it is planned).
	Requests, PlannedRequests int
	// Items are the locations of the push (rows read, and --only ids the
	// relation lacks); ToSend those the push sends (its first round's);
	// Sent those carried by a request so far; Updated, Failed and Refused
	// those settled so; Skipped those with nothing to send (unchanged, or
	// waiting for a change after a permanent failure).
	Items, ToSend, Sent, Updated, Failed, Refused, Skipped int
	// Left is the plan's time from now to its last request (0 once it is
	// past).
	Left time.Duration
}

// Item is what became (or, in a dry run, would become) of one location.
type Item struct {
	ID string `json:"id"`
	// Name and City say which location the id is: its locationName and
	// city as last pulled, or as the relation has them when it was never
	// pulled ("" when unknown). They are data: quote them to show them.
	Name    string           `json:"name,omitempty"`
	City    string           `json:"city,omitempty"`
	Outcome string           `json:"outcome"`
	Changes []listing.Change `json:"changes,omitempty"`
	// Request is bulk or single for an item sent (or to be sent).
	Request   string            `json:"request,omitempty"`
	Code      string            `json:"code,omitempty"`
	Detail    string            `json:"detail,omitempty"`
	Field     string            `json:"field,omitempty"`
	Reason    string            `json:"reason,omitempty"`
	Transient bool              `json:"transient,omitempty"`
	Problems  []listing.Problem `json:"problems,omitempty"`

	desired  listing.Location
	hash     []byte
	baseHash []byte
	attempts int
	// alone: a bulk request carrying it was refused as a whole; a further
	// round sends it singly.
	alone bool
	// unknown: an --only id that neither the relation nor a pull knows
	// (a typo). It is refused in this push's summary, and not recorded:
	// no change of a desired row or of a pulled location can ever come
	// for it, so a recorded refusal would wait for ever.
	unknown bool
}

// Summary is what a push did.
type Summary struct {
	// PushID is the push's row in listing_pushes; 0 for a dry run, and
	// for an undo that sent nothing (it records nothing).
	PushID   int64  `json:"push_id,omitempty"`
	Account  string `json:"account"`
	Relation string `json:"relation"`
	DryRun   bool   `json:"dry_run,omitempty"`
	// Rows are the rows read from the relation.
	Rows int `json:"rows"`
	// Plan is the plan of the first round: in a dry run, what the push
	// would send.
	Plan listing.Plan `json:"-"`
	// PlannedRequests and PlannedDuration are the plan's: PlannedDuration
	// is the time from PlanStart to the last request.
	PlannedRequests int           `json:"planned_requests"`
	PlannedDuration time.Duration `json:"planned_duration_ns"`
	PlanText        string        `json:"plan"`
	// PlanStart is when the plan starts, on the clock the requests are
	// paced on (the client's; the warehouse's, Config.Now, in a dry run
	// without a client); PlannedLast is when its last request goes
	// (PlanStart + PlannedDuration; zero when none is planned). The plan
	// counts the update requests of the account sent in the minute
	// before PlanStart (by an earlier push, perhaps of a process that
	// died), so its first requests may wait.
	PlanStart   time.Time `json:"plan_start"`
	PlannedLast time.Time `json:"planned_last_request_at,omitempty"`
	// TooMany are the answers 429 the push met, retries included (0 at
	// the default settings, unless another client of the account updates
	// it at the same time).
	TooMany int `json:"answers_429"`
	// Requests sent, by kind, and the read-backs (Get location) of items
	// in doubt.
	BulkRequests   int `json:"bulk_requests"`
	SingleRequests int `json:"single_requests"`
	ReadBacks      int `json:"read_backs"`
	// Settled are the items of earlier pushes left in doubt that this one
	// read back and settled.
	Settled int `json:"settled"`
	// The items by outcome.
	ToSend    int `json:"to_send"` // the items the push sends (a dry run: would send), in its first round
	Sent      int `json:"sent"`
	Updated   int `json:"updated"`
	Failed    int `json:"failed"`
	Refused   int `json:"refused"`
	Unchanged int `json:"unchanged"`
	Waiting   int `json:"waiting"`
	InDoubt   int `json:"in_doubt"`
	NotSent   int `json:"not_sent"`
	// Kept are the locations an undo left alone (Kept); Undoes the push
	// it undoes (0 for a push of a relation).
	Kept   int   `json:"kept,omitempty"`
	Undoes int64 `json:"undoes,omitempty"`
	// UndoneRelation is, for an undo of a push of a relation, that
	// relation: it may still hold what the push undone sent, which its
	// next push sends again.
	UndoneRelation string `json:"undone_relation,omitempty"`
	// Items are every location, in id order.
	Items    []Item    `json:"items"`
	Started  time.Time `json:"started_at"`
	Finished time.Time `json:"finished_at"`
	// Status is the push's as listing_pushes records it when it ends:
	// done, failed or interrupted; "" for a dry run.
	Status string `json:"status,omitempty"`
}

// Partial reports whether some location is not as the relation wants
// it: an item failed, was refused, waits for a change after a permanent
// failure, or is left in doubt or unsent. It is the exit status 3 of etl;
// Undone says what is left.
func (s *Summary) Partial() bool {
	return s.Failed+s.Refused+s.Waiting+s.InDoubt+s.NotSent+s.Kept > 0
}

// Undone says what a partial push left undone: "2 failed, 1 refused, 1
// waiting for a change, 0 in doubt, 0 not sent".
func (s *Summary) Undone() string {
	text := fmt.Sprintf("%d failed, %d refused, %d waiting for a change, %d in doubt, %d not sent",
		s.Failed, s.Refused, s.Waiting, s.InDoubt, s.NotSent)
	if s.Kept > 0 {
		text += fmt.Sprintf(", %d kept as they are (changed since push %d by another writer, or no version from before it stored)", s.Kept, s.Undoes)
	}
	return text
}

// ErrBusy is returned when another push of the account is running.
var ErrBusy = errors.New("another push of this account is running")

// busyWait is how long a push waits for the account's lock before it
// says ErrBusy: the lock of a push killed a moment ago (SIGKILL) is held
// until its server process notices the closed connection and ends, which
// takes a moment on a busy server.
const busyWait = 5 * time.Second

// lockAccount takes the session lock of account's pushes on conn, waiting
// at most busyWait for it.
func lockAccount(ctx context.Context, conn *pgxpool.Conn, account string) error {
	if _, err := conn.Exec(ctx, fmt.Sprintf("SET lock_timeout = %d", busyWait.Milliseconds())); err != nil {
		return fmt.Errorf("push: locking account %s: %w", account, err)
	}
	_, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended('etl.listing_push:' || $1, 0))`, account)
	if _, rerr := conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout"); rerr != nil && err == nil {
		err = rerr
	}
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available
		return fmt.Errorf("push of account %s: %w (waited %s for it to end)", account, ErrBusy, busyWait)
	case err != nil:
		return fmt.Errorf("push: locking account %s: %w", account, err)
	}
	return nil
}

// pusher is one push at work.
type pusher struct {
	cfg  Config
	opts Options
	src  source
	conn *pgxpool.Conn // holds the account's lock
	lc   *extract.Listings
	sum  *Summary
	// items by id; order is their ids in order.
	items map[string]*Item
	order []string
	start time.Time // of the first request, on the client's clock
	plan  listing.Plan
	// planEnd is when the current round's plan sends its last request;
	// planned counts the requests of the rounds planned so far.
	planEnd time.Time
	planned int
	toSend  int // the items of the first round
	// stats are the client's counts when the push began.
	stats extract.ListingStats
	// doubts are the items of earlier pushes still in doubt (SENT) by
	// location id: those settleEarlier could not read back, or in a dry
	// run every one. Their locations are not sent until they are settled.
	doubts map[string]doubt
}

// Run pushes the desired locations of cfg.Relation to cfg.Account: see
// the package documentation. A push that could not start returns an
// error and records nothing; one that started returns its Summary, and an
// error when it stopped before settling every item (its items then stay
// PLANNED or SENT, and the push failed).
func Run(ctx context.Context, cfg Config, opts Options) (*Summary, error) {
	return run(ctx, cfg, opts, &relationSource{name: cfg.Relation, account: cfg.Account, only: opts.Only})
}

// source is where a push's desired locations come from: a relation of
// the user's (Run), or the versions before an earlier push (Undo).
type source interface {
	// open checks the source before anything is settled or recorded (the
	// relation exists and has its columns; the push to undo exists), on
	// conn, which holds the account's lock.
	open(ctx context.Context, conn *pgxpool.Conn) error
	// rows reads the desired locations once earlier pushes are settled,
	// with the account's pulled locations, and the items the source
	// itself settles (an undo's KEPT locations).
	rows(ctx context.Context, conn *pgxpool.Conn, pulled map[string]pulled) ([]desired, []*Item, error)
	// record names the source as listing_pushes records it: the relation,
	// and the push undone (0: none).
	record() (relation string, undoes int64)
}

// relationSource reads a relation of the user's.
type relationSource struct {
	name, account string
	only          []string
	rel           *relation
}

func (r *relationSource) open(ctx context.Context, conn *pgxpool.Conn) error {
	rel, err := inspect(ctx, conn, r.name)
	r.rel = rel
	return err
}

func (r *relationSource) rows(ctx context.Context, conn *pgxpool.Conn, _ map[string]pulled) ([]desired, []*Item, error) {
	rows, err := r.rel.read(ctx, conn, r.account, r.only)
	return rows, nil, err
}

func (r *relationSource) record() (string, int64) { return r.rel.name, 0 }

// run is a push of the desired locations of src.
func run(ctx context.Context, cfg Config, opts Options, src source) (*Summary, error) {
	p, err := newPusher(cfg, opts, src)
	if err != nil {
		return nil, err
	}
	cfg, opts = p.cfg, p.opts
	conn, err := cfg.Pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("push: connecting to the warehouse: %w", err)
	}
	defer conn.Release()
	p.conn = conn
	if !opts.DryRun {
		if err := lockAccount(ctx, conn, cfg.Account); err != nil {
			return nil, err
		}
		defer func() {
			_, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(hashtextextended('etl.listing_push:' || $1, 0))`, cfg.Account)
		}()
	}
	toSend, err := p.prepare(ctx)
	if err != nil {
		return nil, err
	}
	p.toSend, p.sum.ToSend = len(toSend), len(toSend)
	if err := p.planFirst(ctx, toSend); err != nil {
		return nil, err
	}
	if opts.DryRun {
		p.sum.Finished = cfg.Now().UTC()
		p.finishSummary()
		return p.sum, nil
	}
	if _, undoes := src.record(); undoes != 0 && len(toSend) == 0 {
		// An undo that sends nothing records nothing: a push with no
		// update would become the account's last, "push N undoes push
		// M", and say nothing. Its summary says what it found (what an
		// earlier push left in doubt stays SENT in that push's record).
		p.sum.Finished = cfg.Now().UTC()
		p.finishSummary()
		return p.sum, nil
	}
	if err := p.begin(ctx); err != nil {
		return nil, err
	}
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.progress())
	}
	runErr := p.send(ctx, toSend)
	if err := p.finish(context.WithoutCancel(ctx), runErr); err != nil && runErr == nil {
		runErr = err
	}
	return p.sum, runErr
}

// newPusher is the pusher of a push of src, with the defaults of cfg and
// opts filled in and both validated; it has no connection yet.
func newPusher(cfg Config, opts Options, src source) (*pusher, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(opts.DryRun); err != nil {
		return nil, err
	}
	if opts.Rounds == 0 {
		opts.Rounds = DefaultRounds
	}
	if opts.Rounds < 1 {
		return nil, fmt.Errorf("push: rounds must be at least 1, got %d", opts.Rounds)
	}
	p := &pusher{cfg: cfg, opts: opts, items: map[string]*Item{}, src: src,
		sum: &Summary{Account: cfg.Account, Relation: cfg.Relation, DryRun: opts.DryRun, Started: cfg.Now().UTC()}}
	if cfg.Client != nil {
		p.lc = cfg.Client.Listings()
		p.stats = p.lc.Stats()
	}
	return p, nil
}

// prepare reads, on p.conn (which holds the account's lock unless in a
// dry run), what the push decides on: it checks the account and opens
// the source, settles the earlier pushes (a dry run reads their doubts
// instead), reads the desired rows with the account's pulled, latest and
// updated locations, settles every item that needs no request (decide)
// and returns the ids to send, in order.
func (p *pusher) prepare(ctx context.Context) ([]string, error) {
	conn, account := p.conn, p.cfg.Account
	if err := CheckAccount(ctx, conn, account); err != nil {
		return nil, err
	}
	if err := p.src.open(ctx, conn); err != nil {
		return nil, err
	}
	pulled, err := readPulled(ctx, conn, account)
	if err != nil {
		return nil, err
	}
	if p.opts.DryRun {
		doubts, err := readDoubts(ctx, conn, account)
		if err != nil {
			return nil, err
		}
		p.doubts = map[string]doubt{}
		for _, d := range doubts {
			p.doubts[d.id] = d
		}
	} else if err := p.settleEarlier(ctx); err != nil {
		return nil, err
	}
	rows, kept, err := p.src.rows(ctx, conn, pulled)
	if err != nil {
		return nil, err
	}
	p.sum.Rows = len(rows)
	if len(pulled) == 0 && len(rows) > 0 {
		return nil, fmt.Errorf("push: no location of account %s was ever pulled (or the account is unknown): pull its listings first (etl listings pull --account %s, or a job with listings: {account: %[2]s})", account, account)
	}
	for _, it := range kept {
		p.items[it.ID] = it
		p.order = append(p.order, it.ID)
	}
	last, err := readLatest(ctx, conn, account)
	if err != nil {
		return nil, err
	}
	updated, err := readUpdated(ctx, conn, account)
	if err != nil {
		return nil, err
	}
	return p.decide(rows, pulled, last, updated), nil
}

// planFirst seeds the client's windows with the account's earlier
// requests and plans the first round of toSend, into the summary.
func (p *pusher) planFirst(ctx context.Context, toSend []string) error {
	if err := p.seed(ctx); err != nil {
		return err
	}
	plan, start, err := p.planRound(ctx, toSend, nil)
	if err != nil {
		return fmt.Errorf("push: planning: %w", err)
	}
	p.plan = plan
	p.sum.Plan, p.sum.PlannedRequests, p.sum.PlannedDuration, p.sum.PlanText = plan, plan.Requests, plan.Duration, plan.Describe()
	p.sum.PlanStart = start
	if plan.Requests > 0 {
		p.sum.PlannedLast = start.Add(plan.Duration)
	}
	return nil
}

// decide settles every row that needs no request and returns the ids to
// send, in order.
func (p *pusher) decide(rows []desired, pulled map[string]pulled, last map[string]latest, updated map[string]updatedContent) []string {
	now := p.cfg.Now()
	count := map[string]int{}
	for _, d := range rows {
		count[d.id]++
	}
	var toSend []string
	for _, d := range rows {
		if _, done := p.items[d.id]; done {
			continue
		}
		if p.decideRow(d, count[d.id], pulled, last, updated, now) {
			toSend = append(toSend, d.id)
		}
	}
	p.refuseOnly(pulled)
	slices.Sort(p.order)
	slices.Sort(toSend)
	for _, id := range toSend {
		p.items[id].Request = "" // set by the plan
	}
	return toSend
}

// decideRow makes the item of row d, whose id n rows of the relation
// hold, and settles it when it needs no request: refused, in doubt,
// unchanged or waiting. send reports that it is PLANNED instead.
func (p *pusher) decideRow(d desired, n int, pulled map[string]pulled, last map[string]latest, updated map[string]updatedContent, now time.Time) (send bool) {
	it := &Item{ID: d.id, desired: listing.UpdateItem(d.loc)}
	p.items[d.id] = it
	p.order = append(p.order, d.id)
	cur, known := pulled[d.id]
	it.Name, it.City = d.loc.LocationName, d.loc.City
	if known {
		it.desired.CountryCode = cur.loc.CountryCode
		it.Name, it.City = cur.loc.LocationName, cur.loc.City
	}
	it.hash = listing.ContentHash(it.desired)
	it.desired.CountryCode = ""
	if ps := rowProblems(d, n); len(ps) > 0 {
		it.refuse(ps)
		return false
	}
	if dt, ok := p.doubts[d.id]; ok {
		// Sending it again before the one in doubt is read back
		// could update it twice.
		it.Outcome, it.Reason = Sent, dt.why
		return false
	}
	var curp *listing.Location
	if known {
		base := cur.loc
		it.baseHash = cur.hash
		if u, ok := updated[d.id]; ok && !u.settledAt.Before(cur.observedAt) {
			// Updated since the pull last saw it: the pull has not
			// seen the update yet. At the same instant, which came
			// first is unknown: the update, which the provider
			// applied, is the safer base (the pull then saw it, or
			// read the location just before).
			base, it.baseHash = u.content, u.hash
		}
		it.Changes = listing.Diff(base, it.desired)
		if len(it.Changes) == 0 {
			it.Outcome = Unchanged
			return false
		}
		curp = &cur.loc
	}
	if ps := listing.Check(d.loc, curp, now); len(ps) > 0 {
		it.refuse(ps)
		return false
	}
	if l, ok := last[d.id]; ok && it.waitOn(l, cur) {
		return false
	}
	it.Outcome = Planned
	return true
}

// rowProblems are the problems that refuse row d, whose id n rows of the
// relation hold, before any diff: no id, an id held more than once, or
// the problems of reading the row. None: nil.
func rowProblems(d desired, n int) []listing.Problem {
	switch {
	case strings.TrimSpace(d.id) == "":
		return []listing.Problem{{Code: listing.CodeRequired, Field: "id", Message: fmt.Sprintf("%d rows without an id (NULL or blank): the push sends a location by its id", n)}}
	case n > 1:
		return []listing.Problem{{Code: CodeDuplicateID, Field: "id",
			Message: fmt.Sprintf("the relation has %d rows for location id %q; keep one", n, d.id)}}
	case len(d.problems) > 0:
		return slices.Clone(d.problems)
	}
	return nil
}

// refuse settles it REFUSED with the problems ps, sorted; the first
// gives its code, field and reason.
func (it *Item) refuse(ps []listing.Problem) {
	sortProblems(ps)
	it.Outcome, it.Problems = Refused, ps
	it.Code, it.Field, it.Reason = ps[0].Code, ps[0].Field, ps[0].Message
}

// waitOn settles it WAITING, and reports so, when the latest push of its
// location, l, failed it permanently (or left it waiting) with the same
// content, and no pull, cur, has seen the location since.
func (it *Item) waitOn(l latest, cur pulled) bool {
	if (l.outcome != Failed && l.outcome != Waiting) || l.transient || !bytes.Equal(l.hash, it.hash) || cur.validFrom.After(l.settledAt) {
		return false
	}
	// A WAITING row carries the failure it waits on.
	it.Outcome, it.Code, it.Detail, it.Field, it.Reason = Waiting, l.code, l.detail, l.field, l.reason
	if l.outcome == Failed {
		it.Reason = fmt.Sprintf("push %d failed it permanently (%s); waiting for a change of the desired or the pulled location", l.pushID, l.reason)
	}
	return true
}

// refuseOnly refuses every --only id the rows did not hold (an undo's:
// that the push undone did not update), each with a note of whether a
// pull has seen it.
func (p *pusher) refuseOnly(pulled map[string]pulled) {
	for _, id := range p.opts.Only {
		if _, ok := p.items[id]; ok {
			continue
		}
		it := &Item{ID: id, Outcome: Refused, Code: CodeNotInRelation, Field: "id",
			Reason: fmt.Sprintf("--only names %q, which the relation %s does not hold", id, p.cfg.Relation), desired: listing.Location{ID: id}}
		if _, known := pulled[id]; !known {
			it.unknown = true
			it.Reason = fmt.Sprintf("--only names %q, which neither the relation %s holds nor a pull of %s has seen (not recorded)", id, p.cfg.Relation, p.cfg.Account)
		}
		if _, undone := p.src.record(); undone != 0 {
			// An undo has nothing to send for it, now or later: a
			// recorded refusal would make a location that may be fine
			// the latest refused of the account.
			it.Code, it.unknown = CodeNotUpdated, true
			it.Reason = fmt.Sprintf("--only names %q, which push %d did not update: nothing of it to undo (not recorded)", id, undone)
		}
		it.Problems = []listing.Problem{{Code: it.Code, Field: it.Field, Message: it.Reason}}
		it.hash = listing.ContentHash(it.desired)
		p.items[id] = it
		p.order = append(p.order, id)
	}
}

// request is one request of a round.
type request struct {
	no   int
	kind string // bulk, single
	ids  []string
	at   time.Duration
}

// requests orders the requests of a plan by the time it sends them (bulk
// first at a tie).
func requests(plan listing.Plan, first int) []request {
	var out []request
	for k, ids := range plan.Bulk {
		out = append(out, request{kind: "bulk", ids: ids, at: plan.BulkAt[k]})
	}
	for k, id := range plan.Single {
		out = append(out, request{kind: "single", ids: []string{id}, at: plan.SingleAt[k]})
	}
	slices.SortStableFunc(out, func(a, b request) int {
		switch {
		case a.at < b.at:
			return -1
		case a.at > b.at:
			return 1
		}
		return 0
	})
	for i := range out {
		out[i].no = first + i
	}
	return out
}

// itemJSON is the content of an item as stored: the desired location with
// its id.
func itemJSON(it *Item) []byte {
	b, err := json.Marshal(it.desired)
	if err != nil {
		panic("push: encoding a location: " + err.Error())
	}
	return b
}

func problemsJSON(ps []listing.Problem) []byte {
	if len(ps) == 0 {
		return nil
	}
	b, _ := json.Marshal(ps)
	return b
}

func changesJSON(cs []listing.Change) []byte {
	if len(cs) == 0 {
		return nil
	}
	b, _ := json.Marshal(cs)
	return b
}

// nullable is s for a text column: NULL when empty, a NUL character (an
// answer's text may hold one; no text of PostgreSQL can) replaced by
// U+FFFD.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	return &s
}

// begin records the push and every item in one transaction: the settled
// ones final, the ones to send PLANNED with their request.
func (p *pusher) begin(ctx context.Context) error {
	relName, undoes := p.src.record()
	var undoesArg *int64
	if undoes != 0 {
		undoesArg = &undoes
	}
	plan := p.plan
	var only []string
	if len(p.opts.Only) > 0 {
		only = p.opts.Only
	}
	kind := map[string]request{}
	for _, r := range requests(plan, 1) {
		for _, id := range r.ids {
			kind[id] = r
		}
	}
	return pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `
			INSERT INTO listing_pushes (account, relation, only_ids, started_at, status, rows_read, planned_requests, planned_seconds, plan, undoes)
			VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8, $9) RETURNING push_id`,
			p.cfg.Account, relName, only, p.sum.Started, p.sum.Rows, plan.Requests, plan.Duration.Seconds(), plan.Describe(), undoesArg).Scan(&p.sum.PushID); err != nil {
			return fmt.Errorf("push: recording the push: %w", err)
		}
		rows := make([][]any, 0, len(p.order))
		for _, id := range p.order {
			it := p.items[id]
			if it.unknown {
				continue
			}
			var reqKind *string
			var reqNo *int
			var after *time.Duration
			if r, ok := kind[id]; ok {
				it.Request = r.kind
				reqKind, reqNo, after = &r.kind, &r.no, &r.at
			}
			var transient *bool
			if it.Outcome == Waiting {
				transient = new(bool)
			}
			var settled *time.Time
			if it.Outcome != Planned {
				settled = &p.sum.Started
			}
			outcome := it.Outcome
			if outcome == Sent {
				// In doubt since an earlier push, whose row says so: not
				// sent by this one.
				outcome = NotSent
			}
			rows = append(rows, []any{p.sum.PushID, id, p.cfg.Account, outcome, itemJSON(it), it.hash, it.baseHash,
				changesJSON(it.Changes), reqKind, reqNo, after, nullable(it.Code), nullable(it.Detail), nullable(it.Field), nullable(it.Reason),
				transient, problemsJSON(it.Problems), settled})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"listing_push_items"},
			[]string{"push_id", "location_id", "account", "outcome", "content", "content_hash", "base_hash", "changes",
				"request_kind", "request_no", "planned_after", "code", "detail", "field", "reason", "transient", "problems", "settled_at"},
			pgx.CopyFromRows(rows)); err != nil {
			return fmt.Errorf("push: recording the items: %w", err)
		}
		return p.checkpoint(ctx, tx)
	})
}

// checkpoint writes the push's counts from its items, inside tx.
func (p *pusher) checkpoint(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `
		UPDATE listing_pushes p SET
			sent = c.sent, updated = c.updated, failed = c.failed, refused = c.refused,
			unchanged = c.unchanged, waiting = c.waiting, kept = c.kept,
			bulk_requests = $2, single_requests = $3, read_backs = $4
		FROM (SELECT count(*) FILTER (WHERE attempts > 0) AS sent,
			count(*) FILTER (WHERE outcome = 'UPDATED') AS updated,
			count(*) FILTER (WHERE outcome = 'FAILED') AS failed,
			count(*) FILTER (WHERE outcome = 'REFUSED') AS refused,
			count(*) FILTER (WHERE outcome = 'UNCHANGED') AS unchanged,
			count(*) FILTER (WHERE outcome = 'WAITING') AS waiting,
			count(*) FILTER (WHERE outcome = 'KEPT') AS kept
			FROM listing_push_items WHERE push_id = $1) c
		WHERE p.push_id = $1`, p.sum.PushID, p.sum.BulkRequests, p.sum.SingleRequests, p.sum.ReadBacks)
	if err != nil {
		return fmt.Errorf("push: recording the push's counts: %w", err)
	}
	return nil
}

// outcome is what one item's request (or read-back) settled.
type outcome struct {
	outcome         string
	code, detail    string
	field, reason   string
	transient       bool
	readBack        bool
	requestID       string
	stillInDoubt    bool // left SENT
	stillInDoubtWhy string
	alone           bool // the item's bulk request was refused as a whole
}

// send sends the items of toSend, in rounds.
func (p *pusher) send(ctx context.Context, toSend []string) error {
	plan := p.plan
	next := 1
	for round := 1; len(toSend) > 0; round++ {
		if round > 1 {
			// What failed transiently (a 429 past the client's retries, a
			// 5xx found not applied) goes again after a back-off, as the
			// client's own retries do; what a bulk request refused as a
			// whole carried goes singly.
			if err := p.lc.Backoff(ctx, round); err != nil {
				return fmt.Errorf("push interrupted: %w", err)
			}
			var singly []string
			for _, id := range toSend {
				if p.items[id].alone {
					singly = append(singly, id)
				}
			}
			var err error
			if plan, _, err = p.planRound(ctx, toSend, singly); err != nil {
				return fmt.Errorf("push: planning round %d: %w", round, err)
			}
		}
		reqs := requests(plan, next)
		next += len(reqs)
		p.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "listings push: sending",
			slog.String("account", p.cfg.Account), slog.Int("round", round), slog.Int("locations", len(toSend)),
			slog.Int("requests", len(reqs)), slog.Duration("planned", plan.Duration))
		for _, r := range reqs {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("push interrupted: %w", err)
			}
			if err := p.one(ctx, r, round > 1); err != nil {
				return err
			}
		}
		toSend = nil
		if round >= p.opts.Rounds {
			break
		}
		for _, id := range p.order {
			if it := p.items[id]; it.Outcome == Failed && it.Transient {
				toSend = append(toSend, id)
			}
		}
	}
	return nil
}

// one sends one request: its items marked SENT and committed first, then
// the request, then their outcomes and the push's counts committed
// together.
func (p *pusher) one(ctx context.Context, r request, retry bool) error {
	wctx := context.WithoutCancel(ctx)
	op := updateOperation(r.kind)
	// The turn of the request under its rate limit, waited for first so
	// that the time recorded is when it leaves: a later push counts it.
	leaves, err := p.lc.WaitTurn(ctx, op)
	if err != nil {
		return fmt.Errorf("push interrupted: %w", err)
	}
	now := p.cfg.Now().UTC()
	if err := pgx.BeginFunc(wctx, p.cfg.Pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(wctx, `
			UPDATE listing_push_items SET outcome = 'SENT', attempts = attempts + 1, sent_at = $3, request_kind = $4, request_no = $5,
				code = NULL, detail = NULL, field = NULL, reason = NULL, transient = NULL, settled_at = NULL
			WHERE push_id = $1 AND location_id = ANY($2)`, p.sum.PushID, r.ids, now, r.kind, r.no)
		if err != nil {
			return fmt.Errorf("push: marking request %d sent: %w", r.no, err)
		}
		if _, err := tx.Exec(wctx, `INSERT INTO listing_push_requests (push_id, request_no, account, kind, locations, sent_at)
			VALUES ($1, $2, $3, $4, $5, $6)`, p.sum.PushID, r.no, p.cfg.Account, r.kind, len(r.ids), leaves.UTC()); err != nil {
			return fmt.Errorf("push: recording request %d: %w", r.no, err)
		}
		return nil
	}); err != nil {
		return err
	}
	attempts := p.lc.Stats()[op.Name].Requests
	for _, id := range r.ids {
		it := p.items[id]
		it.Outcome, it.Request = Sent, r.kind
		it.attempts++
	}
	if p.start.IsZero() {
		p.start = now
	}
	var outs map[string]outcome
	var stop error
	call, done := finishWritten(ctx)
	defer done()
	counter := &p.sum.SingleRequests
	if r.kind == "bulk" {
		counter = &p.sum.BulkRequests
	}
	*counter++
	switch r.kind {
	case "bulk":
		outs, stop = p.sendBulk(ctx, call, r)
	default:
		outs, stop = p.sendSingle(ctx, call, r)
	}
	if outs[r.ids[0]].outcome == NotSent {
		*counter-- // it never left
	}
	attempts = p.lc.Stats()[op.Name].Requests - attempts
	if err := p.record(wctx, outs, r, attempts); err != nil {
		return err
	}
	if p.cfg.Progress != nil {
		p.cfg.Progress(p.progress())
	}
	return stop
}

// updateOperation is the operation of a request of kind bulk or single.
func updateOperation(kind string) *catalog.ListingOperation {
	if kind == "bulk" {
		return catalog.UpdateLocations
	}
	return catalog.UpdateLocation
}

// progress are the push's counts now.
func (p *pusher) progress() Progress {
	pr := Progress{PushID: p.sum.PushID, Requests: p.sum.BulkRequests + p.sum.SingleRequests, PlannedRequests: p.planned, Items: len(p.items), ToSend: p.toSend}
	for _, it := range p.items {
		switch it.Outcome {
		case Updated:
			pr.Updated++
		case Failed:
			pr.Failed++
		case Refused:
			pr.Refused++
		case Unchanged, Waiting:
			pr.Skipped++
		}
		if it.attempts > 0 {
			pr.Sent++
		}
	}
	if p.lc != nil {
		pr.Left = max(p.planEnd.Sub(p.lc.Now()), 0)
	}
	return pr
}

// seed adds the update requests of the account that earlier pushes sent
// within the last period of their rate limits (listing_push_requests) to
// the client's windows, so that the plan and the pacing of this push
// count them. A request the client retried counts when it was answered,
// after its last attempt. A dry run without a client has nothing to seed:
// planRound reads the requests itself.
func (p *pusher) seed(ctx context.Context) error {
	if p.lc == nil {
		return nil
	}
	earlier, err := p.earlier(ctx, p.lc.Now())
	if err != nil {
		return err
	}
	for op, times := range earlier {
		p.lc.Seed(op, times)
	}
	return nil
}

// earlier reads the send times of the account's update requests of the
// last period of each operation's paced limit before now, by operation.
func (p *pusher) earlier(ctx context.Context, now time.Time) (map[*catalog.ListingOperation][]time.Time, error) {
	per := max(extract.UpdateWindowRate(catalog.UpdateLocations).Per, extract.UpdateWindowRate(catalog.UpdateLocation).Per)
	// A request answered within the period may have left before it, when
	// the client retried it; an hour bounds any request's retries (its
	// back-offs and turns), and the rows read.
	rows, err := p.conn.Query(ctx, `
		SELECT kind, greatest(sent_at, CASE WHEN attempts > 1 THEN answered_at END)
		FROM listing_push_requests
		WHERE account = $1 AND sent_at > $2::timestamptz - interval '1 hour' AND coalesce(answered_at, sent_at) > $2`, p.cfg.Account, now.Add(-per))
	if err != nil {
		return nil, fmt.Errorf("push: reading the requests earlier pushes of %s sent: %w", p.cfg.Account, err)
	}
	out := map[*catalog.ListingOperation][]time.Time{}
	for rows.Next() {
		var kind string
		var at time.Time
		if err := rows.Scan(&kind, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("push: reading the requests earlier pushes of %s sent: %w", p.cfg.Account, err)
		}
		op := updateOperation(kind)
		if at.After(now.Add(-extract.UpdateWindowRate(op).Per)) {
			out[op] = append(out[op], at)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("push: reading the requests earlier pushes of %s sent: %w", p.cfg.Account, err)
	}
	return out, nil
}

// planRound plans the sending of ids from now (the client's clock; the
// warehouse's in a dry run without a client), counting the requests the
// windows hold: the client's (seeded), or, without a client, those
// earlier pushes recorded; singly go by single update
// (listing.PlanOptions.Singly). It returns the plan and its start.
func (p *pusher) planRound(ctx context.Context, ids, singly []string) (listing.Plan, time.Time, error) {
	var start time.Time
	windows := map[*catalog.ListingOperation][]time.Time{}
	if p.lc != nil {
		start = p.lc.Now()
		for _, op := range []*catalog.ListingOperation{catalog.UpdateLocations, catalog.UpdateLocation} {
			windows[op] = p.lc.Window(op)
		}
	} else {
		start = p.cfg.Now()
		var err error
		if windows, err = p.earlier(ctx, start); err != nil {
			return listing.Plan{}, start, err
		}
	}
	ago := func(times []time.Time) []time.Duration {
		var out []time.Duration
		for _, t := range times {
			out = append(out, start.Sub(t))
		}
		return out
	}
	plan, err := listing.PlanPush(ids, listing.PlanOptions{
		EarlierBulk: ago(windows[catalog.UpdateLocations]), EarlierSingle: ago(windows[catalog.UpdateLocation]), Singly: singly})
	if err != nil {
		return plan, start, err
	}
	p.planned += plan.Requests
	p.planEnd = start.Add(plan.Duration)
	return plan, start, nil
}

// record commits the outcomes of request r, which the client wrote to the
// network attempts times, with the push's counts.
func (p *pusher) record(ctx context.Context, outs map[string]outcome, r request, attempts int64) error {
	now := p.cfg.Now().UTC()
	answered := p.lc.Now().UTC()
	err := pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE listing_push_requests SET attempts = $3, answered_at = greatest($4, sent_at)
			WHERE push_id = $1 AND request_no = $2`, p.sum.PushID, r.no, min(attempts, math.MaxInt16), answered); err != nil {
			return fmt.Errorf("push: recording the answer to request %d: %w", r.no, err)
		}
		for id, o := range outs {
			if o.stillInDoubt {
				if _, err := tx.Exec(ctx, `UPDATE listing_push_items SET reason = $3 WHERE push_id = $1 AND location_id = $2`,
					p.sum.PushID, id, nullable(o.stillInDoubtWhy)); err != nil {
					return fmt.Errorf("push: recording %s: %w", id, err)
				}
				continue
			}
			if _, err := settle(ctx, tx, p.sum.PushID, id, o, now); err != nil {
				return err
			}
		}
		return p.checkpoint(ctx, tx)
	})
	if err != nil {
		return err
	}
	for id, o := range outs {
		it := p.items[id]
		if o.stillInDoubt {
			it.Reason = o.stillInDoubtWhy
			continue
		}
		it.Outcome, it.Code, it.Detail, it.Field, it.Reason, it.Transient = o.outcome, o.code, o.detail, o.field, o.reason, o.transient
		it.alone = it.alone || o.alone
		if o.outcome == NotSent {
			it.attempts-- // its request never left
		}
	}
	return nil
}

// settle writes the outcome of one item of push.
func settle(ctx context.Context, tx pgx.Tx, push int64, id string, o outcome, now time.Time) (int64, error) {
	var transient *bool
	if o.outcome == Failed {
		transient = &o.transient
	}
	// NOT_SENT: the request never left, so it is not an attempt.
	tag, err := tx.Exec(ctx, `
		UPDATE listing_push_items SET outcome = $3, code = $4, detail = $5, field = $6, reason = $7, transient = $8,
			read_back = $9, request_id = $10, settled_at = $11,
			attempts = attempts - CASE WHEN $3 = 'NOT_SENT' THEN 1 ELSE 0 END,
			sent_at = CASE WHEN $3 = 'NOT_SENT' THEN NULL ELSE sent_at END
		WHERE push_id = $1 AND location_id = $2`,
		push, id, o.outcome, nullable(o.code), nullable(o.detail), nullable(o.field), nullable(o.reason), transient,
		o.readBack, nullable(o.requestID), now)
	if err != nil {
		return 0, fmt.Errorf("push: recording %s: %w", id, err)
	}
	return tag.RowsAffected(), nil
}

// finishWritten returns the context of an update call of the push: ctx,
// except that once the call's request has started to leave (the
// connection is in hand), the end of ctx (a first SIGINT) no longer
// cancels it: the request in flight is finished and its answer recorded,
// where cutting it would leave its items in doubt. Its pacing waits, and
// an attempt not yet begun, still end with ctx. done releases it.
func finishWritten(ctx context.Context) (call context.Context, done func()) {
	var (
		mu               sync.Mutex
		leaving, stopped bool
	)
	call, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	call = httptrace.WithClientTrace(call, &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) {
		mu.Lock()
		defer mu.Unlock()
		leaving = leaving || !stopped
	}})
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leaving {
			stopped = true
			cancel(context.Cause(ctx))
		}
	})
	return call, func() { stop(); cancel(nil) }
}

// sendBulk sends one Update locations request on call (finishWritten);
// the read-backs it needs end with ctx. stop is an error that ends the
// push.
func (p *pusher) sendBulk(ctx, call context.Context, r request) (map[string]outcome, error) {
	locs := make([]listing.Location, len(r.ids))
	for i, id := range r.ids {
		locs[i] = p.items[id].desired
	}
	req, err := listing.NewBulkRequest(locs)
	if err != nil {
		panic("push: a planned bulk request is not valid: " + err.Error()) // PlanPush's requests pass
	}
	body, err := json.Marshal(req)
	if err != nil {
		panic("push: encoding a bulk request: " + err.Error())
	}
	resp, err := p.lc.UpdateMany(call, body)
	if err != nil {
		return p.failed(ctx, r, err)
	}
	defer resp.Body.Close()
	var answer listing.BulkBody
	derr := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&answer)
	outs := map[string]outcome{}
	if derr == nil {
		for _, res := range answer.Data {
			if !slices.Contains(r.ids, res.LocationID) {
				p.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "listings push: a bulk answer reports on a location it was not sent",
					slog.String("location", res.LocationID))
				continue
			}
			o := outcome{requestID: answer.RequestID}
			switch res.State {
			case catalog.StateUpdated:
				o.outcome = Updated
			case catalog.StateFailed:
				o = itemFailure(res.Error)
				o.requestID = answer.RequestID
			default:
				continue // read back below
			}
			outs[res.LocationID] = o
		}
	}
	// Items the answer did not settle (a 2xx whose body failed to read,
	// or that left them out): the request was applied in some way; each
	// is read back.
	for _, id := range r.ids {
		if _, ok := outs[id]; !ok {
			outs[id] = p.readBack(ctx, id, CodeNoResult)
		}
	}
	return outs, nil
}

// itemFailure is the outcome of an item the provider refused with e.
func itemFailure(e *listing.Error) outcome {
	o := outcome{outcome: Failed}
	if e == nil {
		o.code, o.reason = catalog.StateFailed, "the provider failed the item and gave no error"
		return o
	}
	o.code, o.reason = e.Code, e.Message
	if len(e.Details) > 0 {
		d := e.Details[0]
		o.detail, o.field = d.Code, d.Field
		var b strings.Builder
		for i, d := range e.Details {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(d.String())
		}
		o.reason = e.Message + " (" + b.String() + ")"
	}
	return o
}

// sendSingle sends one Update location request on call (finishWritten).
func (p *pusher) sendSingle(ctx, call context.Context, r request) (map[string]outcome, error) {
	id := r.ids[0]
	body, err := json.Marshal(listing.UpdateBody(p.items[id].desired))
	if err != nil {
		panic("push: encoding an update: " + err.Error())
	}
	resp, err := p.lc.Update(call, id, body)
	if err != nil {
		return p.failed(ctx, r, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return map[string]outcome{id: {outcome: Updated, requestID: resp.RequestID}}, nil
}

// failed is the outcome of the items of r whose request returned err.
func (p *pusher) failed(ctx context.Context, r request, err error) (map[string]outcome, error) {
	outs := map[string]outcome{}
	all := func(o outcome) map[string]outcome {
		for _, id := range r.ids {
			outs[id] = o
		}
		return outs
	}
	var le *extract.ListingError
	switch {
	case errors.Is(err, extract.ErrMaybeApplied):
		// Sent and not refused: read each back.
		p.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "listings push: an update may have been applied; reading its locations back",
			slog.String("account", p.cfg.Account), slog.Int("request", r.no), slog.String("error", err.Error()))
		for _, id := range r.ids {
			outs[id] = p.readBack(ctx, id, CodeNotApplied)
		}
		return outs, nil
	case errors.As(err, &le) && (le.Status == http.StatusUnauthorized || le.Status == http.StatusForbidden):
		// The account cannot update: nothing more will pass.
		o := outcome{outcome: Failed, code: fmt.Sprintf("HTTP_%d", le.Status), reason: le.Error(), transient: true, requestID: le.RequestID}
		if le.Object != nil {
			o = itemFailure(le.Object)
			o.transient, o.requestID = true, le.RequestID
		}
		return all(o), fmt.Errorf("push of account %s stopped: %w", p.cfg.Account, err)
	case errors.As(err, &le) && le.Status == http.StatusTooManyRequests:
		return all(outcome{outcome: Failed, code: "HTTP_429", reason: le.Error(), transient: true}), nil
	case errors.As(err, &le):
		// A single update refused is the item's failure: permanent, but
		// for the statuses that say another attempt may pass. A bulk
		// request refused as a whole (spec 7.1; or its body too large)
		// is no item's own: transient, and sent again singly, since the
		// same request would be refused again. With or without the error
		// envelope (a proxy's page).
		o := outcome{outcome: Failed, code: fmt.Sprintf("HTTP_%d", le.Status), reason: le.Error()}
		if le.Object != nil {
			o = itemFailure(le.Object)
		}
		o.requestID = le.RequestID
		o.transient = r.kind == "bulk" || retryable(le.Status)
		o.alone = r.kind == "bulk" && !retryable(le.Status)
		return all(o), nil
	case errors.Is(err, extract.ErrNotSent) && ctx.Err() != nil:
		// Interrupted before it left.
		return all(outcome{outcome: NotSent, reason: "the push was interrupted before sending it"}),
			fmt.Errorf("push of account %s interrupted: %w", p.cfg.Account, context.Cause(ctx))
	case errors.Is(err, extract.ErrNotSent):
		// Never left (the API unreachable, the account signed out): not
		// sent, and nothing more will leave; stop.
		return all(outcome{outcome: NotSent, reason: "never sent: " + err.Error()}),
			fmt.Errorf("push of account %s stopped: %w", p.cfg.Account, err)
	}
	// Anything else (the context ended mid-request, ...): whether it left
	// is unknown, so the items stay SENT, for the next push to read back.
	for _, id := range r.ids {
		outs[id] = outcome{stillInDoubt: true, stillInDoubtWhy: "in doubt: " + err.Error()}
	}
	return outs, fmt.Errorf("push of account %s stopped: %w", p.cfg.Account, err)
}

// retryable reports whether an update refused with status may pass as it
// is: a timeout (408), too early (425), or a server's failure (5xx).
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooEarly || status >= 500
}

// readBack settles an item whose request left doubt: the location read
// back equals what was sent (UPDATED) or not (FAILED, transient, with
// code notApplied); it stays SENT when it cannot be read.
func (p *pusher) readBack(ctx context.Context, id string, notApplied string) outcome {
	sent := p.items[id].desired
	o, ok := readBack(ctx, p.lc, p.cfg.Logger, id, sent, notApplied)
	p.sum.ReadBacks++
	if !ok {
		return outcome{stillInDoubt: true, stillInDoubtWhy: o.reason}
	}
	return o
}

// readBack reads location id back and compares it with sent. ok is false
// when it could not be read: the item stays in doubt, o.reason says why.
func readBack(ctx context.Context, lc *extract.Listings, log *slog.Logger, id string, sent listing.Location, notApplied string) (o outcome, ok bool) {
	resp, err := lc.Get(ctx, id)
	if err != nil {
		var le *extract.ListingError
		if errors.As(err, &le) && le.HasDetail(catalog.DetailLocationNotFound) {
			o := itemFailure(le.Object)
			o.readBack, o.requestID = true, le.RequestID
			return o, true
		}
		log.LogAttrs(ctx, slog.LevelWarn, "listings push: a location in doubt could not be read back",
			slog.String("location", id), slog.String("error", err.Error()))
		return outcome{reason: "in doubt: reading it back failed: " + err.Error()}, false
	}
	defer resp.Body.Close()
	var body listing.LocationBody
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return outcome{reason: "in doubt: reading it back failed: " + err.Error()}, false
	}
	if listing.Equal(body.Data, sent) {
		return outcome{outcome: Updated, readBack: true, requestID: body.Requested,
			reason: "read back after an answer that left doubt: applied"}, true
	}
	return outcome{outcome: Failed, code: notApplied, readBack: true, transient: true, requestID: body.Requested,
		reason: "read back after an answer that left doubt: not applied (the location differs from what was sent); sent again by the next round or push"}, true
}

// settleEarlier marks the pushes of the account that a dead process left
// running as interrupted (their PLANNED items NOT_SENT), and reads back
// their items left SENT, settling each as UPDATED (applied) or FAILED
// (not applied, transient); one that cannot be read stays SENT.
func (p *pusher) settleEarlier(ctx context.Context) error {
	now := p.cfg.Now().UTC()
	if err := pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			UPDATE listing_push_items i SET outcome = 'NOT_SENT', settled_at = $2, reason = 'its push ended before sending it'
			FROM listing_pushes p WHERE p.push_id = i.push_id AND p.account = $1 AND p.status = 'running' AND i.outcome = 'PLANNED'`,
			p.cfg.Account, now); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE listing_pushes SET status = 'interrupted', finished_at = greatest($2, started_at),
			error = 'the process ended before the push did' WHERE account = $1 AND status = 'running'`, p.cfg.Account, now)
		return err
	}); err != nil {
		return fmt.Errorf("push: closing the interrupted pushes of %s: %w", p.cfg.Account, err)
	}
	doubts, err := readDoubts(ctx, p.conn, p.cfg.Account)
	if err != nil {
		return err
	}
	p.doubts = map[string]doubt{}
	if len(doubts) > 0 && p.lc == nil {
		return errors.New("push: items in doubt and no client to read them back")
	}
	for _, d := range doubts {
		o, ok := readBack(ctx, p.lc, p.cfg.Logger, d.id, d.sent, CodeNotApplied)
		p.sum.ReadBacks++
		if !ok {
			d.why = fmt.Sprintf("in doubt since push %d, and %s: not sent again until it is read back", d.push, strings.TrimPrefix(o.reason, "in doubt: "))
			p.doubts[d.id] = d
			continue
		}
		if err := pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
			if _, err := settle(ctx, tx, d.push, d.id, o, p.cfg.Now().UTC()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `UPDATE listing_pushes SET updated = updated + $2, failed = failed + $3 WHERE push_id = $1`,
				d.push, b2i(o.outcome == Updated), b2i(o.outcome == Failed))
			return err
		}); err != nil {
			return fmt.Errorf("push: settling %s of push %d: %w", d.id, d.push, err)
		}
		p.sum.Settled++
		p.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "listings push: settled an item left in doubt",
			slog.String("location", d.id), slog.Int64("push", d.push), slog.String("outcome", o.outcome))
	}
	return nil
}

// doubt is an item of an earlier push left in doubt (SENT).
type doubt struct {
	push int64
	id   string
	sent listing.Location
	why  string // what a push says of the location while it stays in doubt
}

// readDoubts reads the items of account's pushes left in doubt (SENT), by
// push and location id.
func readDoubts(ctx context.Context, q querier, account string) ([]doubt, error) {
	rows, err := q.Query(ctx, `SELECT i.push_id, i.location_id, i.content FROM listing_push_items i
		WHERE i.account = $1 AND i.outcome = 'SENT' ORDER BY i.push_id, i.location_id`, account)
	if err != nil {
		return nil, fmt.Errorf("push: reading the items in doubt of %s: %w", account, err)
	}
	defer rows.Close()
	var out []doubt
	for rows.Next() {
		var d doubt
		var content []byte
		if err := rows.Scan(&d.push, &d.id, &content); err != nil {
			return nil, fmt.Errorf("push: reading the items in doubt of %s: %w", account, err)
		}
		if err := json.Unmarshal(content, &d.sent); err != nil {
			return nil, fmt.Errorf("push: the content sent to %s: %w", d.id, err)
		}
		d.why = fmt.Sprintf("in doubt since push %d: read back before anything is sent", d.push)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("push: reading the items in doubt of %s: %w", account, err)
	}
	return out, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// finish records the end of the push: the items never sent NOT_SENT, its
// status and counts.
func (p *pusher) finish(ctx context.Context, runErr error) error {
	now := p.cfg.Now().UTC()
	status, msg := "done", (*string)(nil)
	if runErr != nil {
		status = "failed"
		if ctx.Err() != nil || errors.Is(runErr, context.Canceled) {
			status = "interrupted"
		}
		msg = nullable(runErr.Error())
	}
	err := pgx.BeginFunc(ctx, p.cfg.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE listing_push_items SET outcome = 'NOT_SENT', settled_at = $2, reason = 'the push stopped before sending it'
			WHERE push_id = $1 AND outcome = 'PLANNED'`, p.sum.PushID, now); err != nil {
			return err
		}
		if err := p.checkpoint(ctx, tx); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE listing_pushes SET status = $2, finished_at = greatest($3, started_at), error = $4 WHERE push_id = $1`,
			p.sum.PushID, status, now, msg)
		return err
	})
	for _, it := range p.items {
		if it.Outcome == Planned {
			it.Outcome = NotSent
		}
	}
	p.sum.Finished, p.sum.Status = now, status
	if p.lc != nil {
		for name, st := range p.lc.Stats() {
			p.sum.TooMany += int(st.TooMany - p.stats[name].TooMany)
		}
	}
	p.finishSummary()
	if err != nil {
		return fmt.Errorf("push: recording its end: %w", err)
	}
	return nil
}

// finishSummary fills the summary's items and counts.
func (p *pusher) finishSummary() {
	s := p.sum
	s.Items = make([]Item, 0, len(p.order))
	s.Sent, s.Updated, s.Failed, s.Refused, s.Unchanged, s.Waiting, s.InDoubt, s.NotSent, s.Kept = 0, 0, 0, 0, 0, 0, 0, 0, 0
	for _, id := range p.order {
		it := p.items[id]
		if it.attempts > 0 {
			s.Sent++
		}
		switch it.Outcome {
		case Updated:
			s.Updated++
		case Failed:
			s.Failed++
		case Refused:
			s.Refused++
		case Unchanged:
			s.Unchanged++
		case Waiting:
			s.Waiting++
		case Sent:
			s.InDoubt++
		case NotSent:
			s.NotSent++
		case Kept:
			s.Kept++
		}
		s.Items = append(s.Items, *it)
	}
	if s.DryRun {
		for i := range s.Items {
			if s.Items[i].Outcome == Planned {
				s.Items[i].Request = requestKind(p.plan, s.Items[i].ID)
			}
		}
	}
}

func requestKind(plan listing.Plan, id string) string {
	if slices.Contains(plan.Single, id) {
		return "single"
	}
	return "bulk"
}
