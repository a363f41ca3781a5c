// Package sidecar is the record API of one pod: an HTTP server (over
// loopback TCP or a Unix socket) in front of the pod's mirror.Mirror, so that
// a pipeline written in any language records coverage, checkpoints, reads
// the committed gaps and keeps its source positions while `covmirror serve`
// holds the local tier's lock.
//
//	POST /v1/records              JSON array or NDJSON of {"sink","topic","partition","start","end"}
//	POST /v1/checkpoint           Mirror.Checkpoint now: {"checkpoints","batches","destinations","positions","duration_seconds","joined"}
//	POST /v1/release              a JSON array of {"topic","partition"} this pod no longer owns: Mirror.Release (checkpoint,
//	                              then drop their local state, every sink): {"released","retained","checkpoints","batches"}
//	GET  /v1/gaps                 ?reference=&sink=&topic=&partition=: committed gaps, as `covmirror gaps --json`
//	                              (+ &acked_end=N[&acked_start=S] with topic and partition: that partition's extent)
//	POST /v1/gaps                 the same, with a JSON array of extents [{"topic","partition","start","end"}] as the body
//	GET  /v1/plan, POST /v1/plan  the recovery plan, as `covmirror plan --json`, taking what /v1/gaps takes and
//	                              max_batches=, max_tasks=, filtered before it is cut to max_tasks (a longer plan's
//	                              tasks, taken in turn from every destination, have header Covmirror-Plan-Truncated)
//	GET  /v1/committed            ?sink=&topic=&partition=: the committed coverage, as `covmirror query coverage --json`
//	GET  /v1/coverage             this pod's local view (local.Store.Handler)
//	PUT  /v1/extents              a JSON array of extents: the source's acked extents, kept in memory (ExtentBook),
//	                              bounded by partitions and by MaxExtentBytes of topic names; answers {"extents","changed"}
//	GET  /v1/extents              the extents kept
//	DELETE /v1/extents            ?topic=T&partition=P (topic alone: its partitions; none: all): forget reported extents
//	PUT  /v1/positions/{source}   {"partition","cursor","raw_end"}: a stored source's position
//	GET  /v1/positions/{source}   ?partition=P: the position to resume from
//
// Every gap and task row says its kind: "replay" for a sink's gap,
// "verify-reference" for a hole in raw's own coverage. Raw's holes are
// looked for over the source's acked extents too (recovery.ReferenceHoles):
// the request's, widened by those reported with PUT /v1/extents, so a
// stream's first or last stretch lost on every tier is found. An extent
// without a start takes its topic's declared start (Options.Starts).
//
// Every answer is JSON; an error is {"error", "rule"} (and "entry" when one
// record entry is at fault). Options.Extra mounts more routes; Collector
// counts requests, records and rejects by route.
//
// Everything served over TCP, Extra included, is behind one guard
// (guard.go): a Host that is not localhost, an IP literal or one of
// Options.AllowedHosts is 421 (DNS rebinding), a foreign Origin or a
// cross-site Sec-Fetch-Site is 403, a missing or wrong bearer token (with
// Options.Token) is 401, and a write whose Content-Type is not
// application/json or application/x-ndjson is 415: what a browser's page
// of another origin can send without a CORS preflight never reaches a
// route. The Unix socket, mode 0600, is not guarded.
//
// # The invariant it owns
//
// Coverage and source positions may lag, never lead:
//
//   - Only a program of the pod may write coverage, positions or
//     checkpoints: one that holds the socket (the serving user), or that
//     reaches the TCP listener by a name of this server and, when
//     Options.Token is set, carries the token. A web page opened in a
//     browser on the pod's host cannot: the guard refuses its requests
//     before any route reads them, so nothing is recorded, buffered or
//     checkpointed, and nothing is read, on a page's say-so. A listener
//     other hosts can reach needs the token (ListenTCP).
//   - A record is made only because the caller says the sink durably
//     acknowledged the batches: call POST /v1/records only after the sink's
//     durable ack, never before or in anticipation of it. The API cannot
//     check this; it is the caller's promise.
//   - A record request is all or nothing with respect to validation: every
//     entry is decoded and validated (exact field names, types, partition
//     range, uint64 batch ids, coverage.ValidateNew: no control character in a name, MaxBatchEnd) before
//     the first is recorded; an invalid entry fails the whole request with
//     400 naming the entry and the rule, and nothing is recorded. A local
//     tier that fails midway is reported with how many entries were recorded
//     (a lag: the caller retries the rest; coverage is a union, so recording
//     twice is harmless). 200 means the local tier accepted every entry,
//     not that it is fsynced: with local.Options.Sync off (serve's default;
//     serve --sync turns it on) a record waits in memory for up to
//     local.Options.CommitDelay (2ms) before its write-behind commit hands
//     it to the operating system. A 200 survives a clean stop (SIGTERM: the
//     final checkpoint carries it, or the request gets 503), and a SIGKILL
//     or an OOM kill once that commit ran: a kill loses at most the records
//     of the last CommitDelay and the commit then running. A machine losing
//     power, or a lost node, loses those since the last fsync (every
//     checkpoint's begin is one). That is a lag: the sinks hold the batches,
//     and a replay of the gaps covers them.
//   - PUT /v1/positions is held to the same rules (one object, exact
//     field names once each, numbers as numbers, UTF-8 text); a body that
//     times out or breaks off is 408 (rule timeout or body-read), blamed on
//     no entry; a query parameter given twice is 400. Nothing is recorded
//     or buffered from a refused request.
//   - POST /v1/release drops nothing the durable tier lacks:
//     Mirror.Release checkpoints first and drops the local state only of
//     destinations whose every range is committed; a checkpoint that fails
//     answers 503 (rule durable-tier) and drops nothing. Its body is held
//     to the record rules (one array, exact field names, a partition of
//     digits, a valid topic name); a refused body releases nothing.
//   - A position is resolved with coverage.SafePosition against raw's
//     committed coverage in the durable tier, so GET never returns a
//     position past a gap in raw. PUT buffers the position in the Mirror,
//     which saves it only after the next checkpoint's coverage commit;
//     losing the buffer in a crash resumes the source from an older
//     position (a lag). Broker-managed sources get 409: their broker holds
//     the authoritative position.
//   - A source extent only widens where raw's holes are looked for: an
//     over-reported end is verification work (raw is read back and only
//     what it holds recorded), never a hidden gap or claimed coverage. The
//     reported extents live in memory (a restart forgets them until the
//     pipeline reports again, a lag) and only ever widen, until DELETE
//     /v1/extents forgets them (again a lag: holes are then looked for as
//     without them).
//   - On Shutdown new writes answer 503, requests in flight finish (until
//     its context is done), and then no record request records any more:
//     one that has not recorded by then answers 503, and Shutdown waits for
//     those recording. The caller's Mirror.Close then runs the final
//     checkpoint, which carries every record answered 200.
package sidecar
