// Package reconcile proves that what coverage claims is really held by the
// sinks: for each selected sink it reads committed coverage from a durable
// tier, asks the sink's [Checker] which of those batch ids it holds, and
// reports the claimed ranges the sink does not hold as rows of kind
// claimed-absent, which [Tasks] turns into recovery tasks: the reference's
// verifications first, then replays clipped to what the reference holds.
//
// # The invariant
//
// Coverage is recorded only after a sink's durable acknowledgement, so it can
// lead only when something outside covmirror takes data away afterwards (a
// restore from an older backup, a wrong truncation, a sink that acknowledged
// and lost its write). This package finds such a lead and never makes
// coverage worse while doing so:
//
//   - A reconcile never removes or shrinks coverage. It only reads the
//     durable tier; union merge stays the rule.
//   - A claimed-absent range becomes a replay, never a retraction: replaying
//     batches a sink already holds is harmless (record-id dedup absorbs it),
//     while retracting coverage could hide a later loss.
//   - Nothing is reported absent because a check failed. A failed, timed-out
//     or malformed check, or one naming batch ids outside the asked range, is
//     an error naming the sink and destination ([CheckError]); that
//     destination's report then holds no claimed-absent rows at all, and a
//     check answered as the run's context ended is not believed.
//   - A failure does not hide the absences the run can find elsewhere: the
//     sink's other destinations, and the other sinks, are still checked and
//     reported.
//   - A configuration mistake is an error, not a clean report: a selected
//     sink with no committed coverage (a misspelt name) is a
//     [NoCoverageError], and a checker that cannot tell destinations apart
//     refuses a second one.
//
// # Checkers
//
// [SQLChecker] runs the user's query through database/sql (PostgreSQL through
// pgx's stdlib driver, MySQL and MariaDB through go-sql-driver/mysql),
// [HTTPChecker] asks a service for JSON, and [IcebergChecker] scans a batch-id
// column of an Iceberg sink table. A sink that can only count implements
// [Counter]; [Counting] adapts it, treating a range whose count falls short
// of its length as wholly suspect.
//
// # Configuration and credentials
//
// [AddConfigEntry] and [ParseConfig] read a sink's checker from
// reconcile.SINK.KEY entries of the configuration file, and [Build] makes
// the checkers. A credential is never in the configuration: a DSN or a
// token is read from the environment variable its dsn-env or token-env key
// names, and a key that would hold one (dsn, token, password, secret), or
// a URL with user info, is refused without repeating its value. No error a
// built checker returns, and so no log line, shows the DSN or its
// password: they are replaced by xxxxx.
//
// # The command and its metrics
//
// [Job] runs one reconcile as covmirror reconcile does, feeding [Metrics],
// the collector of scheduled runs. A destination's claimed-absent batches
// are forgotten only when a run asks about them again and finds them
// held: a failing check, or a sample that drew other pieces, never
// silences an alert. [MetricsHandler] refuses pages of other sites (DNS
// rebinding, a foreign Origin) as the sidecar's guard does.
//
// # Dependencies
//
// reconcile imports coverage, durable (the tier it reads), recovery (the task
// type it hands to the recovery worker) and internal/wirejson; of the
// outside world, the two SQL drivers (and pgx's DSN parser, to find a
// password to redact), iceberg-go, arrow-go (the record batches an Iceberg
// scan returns), golang.org/x/time/rate and client_golang.
// It works on any durable.Tier and reaches no concrete tier.
package reconcile
