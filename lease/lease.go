package lease

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// DefaultTTL is Options.TTL's default: a lease a crashed holder left is
// taken over 30 to 40 seconds later, and 500 waiting pods read the lease
// about 50 times a second between them.
const DefaultTTL = 30 * time.Second

// Options configure a lease contender. The zero value, after
// EnsureDefaults, is a contender named by Holder with DefaultTTL.
type Options struct {
	// Role names the work the lease guards, one holder per role and
	// deployment: a path segment of letters, digits, '-', '_' and '.'.
	// Required.
	Role string
	// Holder names this contender in the lease and in logs (the pod's
	// writer name). Required. Two contenders with one name still hold
	// one at a time: each also carries a random token.
	Holder string
	// TTL is how long a lease stays taken without a renewal. Zero:
	// DefaultTTL.
	TTL time.Duration
	// RenewEvery is the time between a holder's renewals, and between a
	// contender's attempts. Zero: TTL/3.
	RenewEvery time.Duration
	// RenewDeadline is how long after the start of its last successful
	// renewal a holder that could not renew gives up; it must be less than
	// TTL, by as much as clocks may drift apart over a TTL. Zero: 2/3 TTL.
	RenewDeadline time.Duration
	// Logger gets acquisitions, losses and failed attempts. Zero: discard.
	Logger *slog.Logger
}

// EnsureDefaults fills in the zero fields' defaults.
func (o *Options) EnsureDefaults() {
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.RenewEvery == 0 {
		o.RenewEvery = o.TTL / 3
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = o.TTL * 2 / 3
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate checks the options after EnsureDefaults.
func (o *Options) Validate() error {
	switch {
	case !validRole(o.Role):
		return fmt.Errorf("lease: role %q: give a name of letters, digits, '-', '_' and '.', not starting with '.'", o.Role)
	case o.Holder == "":
		return errors.New("lease: Options.Holder is empty: name the contender (the pod's writer name)")
	case o.TTL <= 0 || o.RenewEvery <= 0 || o.RenewDeadline <= 0:
		return errors.New("lease: the TTL, the renewal interval and the renewal deadline must be positive")
	case o.RenewDeadline >= o.TTL || o.RenewEvery >= o.RenewDeadline:
		return fmt.Errorf("lease: the renewal interval (%s) must be below the renewal deadline (%s), and that below the TTL (%s): a holder must give up before a contender may take over", o.RenewEvery, o.RenewDeadline, o.TTL)
	}
	return nil
}

func validRole(s string) bool {
	if s == "" || s[0] == '.' || len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Lease is one contender for one role's lease.
type Lease interface {
	// Acquire blocks until this contender holds the lease, or returns
	// ctx's error. The context it returns ends when the lease is lost: a
	// renewal refused or not confirmed by the renewal deadline (its cause
	// is ErrLost), ctx ended (ctx's cause), or Close (ErrClosed). A
	// contender that lost the lease may Acquire again.
	Acquire(ctx context.Context) (held context.Context, err error)
	// Close stops renewing, releases a lease held so that another
	// contender takes it at once, and frees what the contender holds open.
	Close() error
	// Name says where the lease lives and who contends, for logs.
	Name() string
}

// ErrLost is the cause (context.Cause) of a held context that ended
// because the lease was lost; ErrClosed, because the contender closed.
var (
	ErrLost   = errors.New("lease lost")
	ErrClosed = errors.New("lease contender closed")
)

// backend is one store's primitive operations; driver runs the loops
// around them. No method is called concurrently with another.
type backend interface {
	// try makes one attempt to take the lease; held reports success.
	try(ctx context.Context) (held bool, err error)
	// renew confirms the lease is still this contender's. An error is a
	// loss when lost reports it (refused), else of unknown outcome:
	// retried until the renewal deadline.
	renew(ctx context.Context) (lost bool, err error)
	// drop gives the lease up: release (Close) writes it released,
	// otherwise only local resources go (a lost lease, a crashed holder).
	drop(ctx context.Context, release bool) error
	name() string
}

// driver is a Lease over a backend: the acquisition loop and the renewal
// loop with its deadline.
type driver struct {
	opts Options
	b    backend
	// closing ends at Close: every call into b derives from it, so that
	// Close never waits on a store that hangs.
	closing  context.Context
	closeAll context.CancelFunc

	// mu serializes calls into b: a channel, not a sync.Mutex, so that
	// a wait on it is a durable block under testing/synctest.
	mu     chan struct{}
	closed bool
	// stopped is closed when the current holding's renewal loop has
	// finished (and dropped what it held); nil: no holding.
	stopped chan struct{}
}

func newDriver(opts Options, b backend) *driver {
	d := &driver{opts: opts, b: b, mu: make(chan struct{}, 1)}
	d.closing, d.closeAll = context.WithCancel(context.Background())
	return d
}

func (d *driver) lock()   { d.mu <- struct{}{} }
func (d *driver) unlock() { <-d.mu }

func (d *driver) Name() string { return d.b.name() }

func (d *driver) Acquire(ctx context.Context) (context.Context, error) {
	log := d.opts.Logger.With("lease", d.b.name(), "holder", d.opts.Holder)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(d.closing, cancel)()
	for {
		d.lock()
		if d.closed {
			d.unlock()
			return nil, ErrClosed
		}
		if d.stopped != nil {
			// The last holding's loop is still dropping it.
			stopped := d.stopped
			d.unlock()
			select {
			case <-ctx.Done():
				return nil, d.acquireErr(ctx)
			case <-stopped:
			}
			continue
		}
		start := time.Now()
		held, err := d.b.try(ctx)
		if took := time.Since(start); held && ctx.Err() == nil && took >= d.opts.RenewDeadline {
			// A contender times a write from when it sees it: a write
			// answered this late may have landed a TTL ago, and been
			// taken over since. Give it up; the next attempt takes the
			// lease again if it is still this contender's.
			log.Warn("lease: the lease was taken, but the store answered too late to rely on; trying again", "took", took.String(), "renew_deadline", d.opts.RenewDeadline.String())
			dctx, dcancel := context.WithTimeout(context.Background(), d.opts.RenewEvery)
			_ = d.b.drop(dctx, false)
			dcancel()
			held = false
		}
		if held && ctx.Err() == nil {
			heldCtx := d.hold(parent, start, log)
			d.unlock()
			return heldCtx, nil
		}
		d.unlock()
		if err != nil && ctx.Err() == nil {
			log.Warn("lease: an attempt to take the lease failed; retrying", "err", err, "retry_in", d.opts.RenewEvery.String())
		}
		t := time.NewTimer(d.opts.RenewEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			// A lock granted and not yet reported goes with the session.
			d.lock()
			dctx, dcancel := context.WithTimeout(context.Background(), d.opts.RenewEvery)
			_ = d.b.drop(dctx, false)
			dcancel()
			d.unlock()
			return nil, d.acquireErr(ctx)
		case <-t.C:
		}
	}
}

func (d *driver) acquireErr(ctx context.Context) error {
	if d.closing.Err() != nil {
		return ErrClosed
	}
	return ctx.Err()
}

// hold starts the renewal loop of a lease taken by a write that started
// at start; d.mu is held. The held context ends with parent (a holder
// that stops without Close, as a crash does: nothing is released), at
// Close and when the loop finds the lease lost.
func (d *driver) hold(parent context.Context, start time.Time, log *slog.Logger) context.Context {
	held, cancel := context.WithCancelCause(parent)
	stopClosing := context.AfterFunc(d.closing, func() { cancel(ErrClosed) })
	// The deadline fires even while a renewal hangs in a backend that
	// ignores its context.
	deadline := time.AfterFunc(time.Until(start.Add(d.opts.RenewDeadline)), func() {
		cancel(fmt.Errorf("%w: not renewed within %s", ErrLost, d.opts.RenewDeadline))
	})
	stopped := make(chan struct{})
	d.stopped = stopped
	go func() {
		defer close(stopped)
		defer stopClosing()
		defer deadline.Stop()
		last := start
		tick := time.NewTicker(d.opts.RenewEvery)
		defer tick.Stop()
		defer func() {
			d.lock()
			defer d.unlock()
			d.stopped = nil
			if errors.Is(context.Cause(held), ErrClosed) {
				return // Close releases it
			}
			ctx, c := context.WithTimeout(context.Background(), d.opts.RenewEvery)
			defer c()
			if err := d.b.drop(ctx, false); err != nil {
				log.Debug("lease: dropping a lost lease", "err", err)
			}
		}()
		for {
			select {
			case <-held.Done():
				if cause := context.Cause(held); !errors.Is(cause, ErrClosed) {
					log.Warn("lease: lost; the work stops", "cause", cause)
				}
				return
			case <-tick.C:
			}
			begin := time.Now()
			rctx, rcancel := context.WithDeadline(held, last.Add(d.opts.RenewDeadline))
			d.lock()
			lost, err := d.b.renew(rctx)
			d.unlock()
			rcancel()
			switch {
			case err == nil && held.Err() == nil:
				last = begin
				deadline.Reset(time.Until(last.Add(d.opts.RenewDeadline)))
			case lost:
				cancel(fmt.Errorf("%w: %w", ErrLost, err))
			case err != nil && held.Err() == nil:
				log.Warn("lease: a renewal failed; retrying until the renewal deadline", "err", err)
			}
		}
	}()
	return held
}

func (d *driver) Close() error {
	d.closeAll()
	d.lock()
	if d.closed {
		d.unlock()
		return nil
	}
	d.closed = true
	stopped := d.stopped
	d.unlock()
	if stopped != nil {
		<-stopped
	}
	d.lock()
	defer d.unlock()
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.RenewEvery)
	defer cancel()
	return d.b.drop(ctx, true)
}
