// Package client is the Go client of the record API a pod serves
// (`covmirror serve`, package sidecar), for Go programs outside the pod's
// process: over loopback TCP (Options.Address, with the bearer token of
// serve's --token-file) or over the pod's Unix socket (Options.Socket).
//
//	c, err := client.New(client.Options{Socket: "/run/covmirror/api.sock"})
//	...
//	// Only after the sink durably acknowledged the batches:
//	err = c.Record(ctx, []coverage.Entry{{Destination: dest, Range: rng}})
//
// Record is POST /v1/records; Checkpoint, Release, Gaps, Plan,
// Committed, PutExtents, Extents, PutPosition and Position are the API's
// other routes, with typed results. The package depends on coverage, the
// module's retry schedule and redaction, and the standard library only, so
// that a program embedding it links neither Pebble, Iceberg nor DuckDB.
//
// # The invariant it owns
//
// Coverage may lag, never lead. The client cannot see a sink, so its part
// is to never turn an unknown outcome into a claimed one:
//
//   - Call Record only after the sink's durable acknowledgement of every
//     entry, never before it or in anticipation of it. That is the
//     caller's promise; neither the client nor the server can check it.
//   - A nil error from Record means the pod's local tier accepted every
//     entry (the server answered 200 with a count equal to len(entries)).
//     Any error means maybe recorded, maybe not: a lag, which the recovery
//     plan finds as a gap and a replay covers. Record the entries again, or
//     leave them to recovery; never treat them as recorded.
//   - A request is all or nothing with respect to validation: an invalid
//     entry fails the whole call with an *Error naming the entry and the
//     server's rule, and nothing is recorded. Entries are sent as given:
//     a sink or topic name that is not valid UTF-8 is refused before
//     sending (rule invalid-utf8, Status 0), since JSON would replace its
//     bytes and record another destination's name.
//   - Retries are safe because recording twice is harmless: coverage is a
//     union, so a request that was recorded and whose answer was lost
//     changes nothing when it is sent again. So every call is retried, up
//     to Options.MaxAttempts with a capped, jittered exponential wait
//     (internal/backoff), on a transport error (refused, reset, timed out)
//     and on 408, 429 and every 5xx (503 when the pod shuts down or its
//     local tier fails). A refusal (any other 4xx) is never retried: the
//     same request would be refused again. The context bounds every
//     attempt and every wait.
//   - The token is sent only over TCP, as "Authorization: Bearer TOKEN",
//     and never appears in an error or a log line, whole or in part: an
//     answer's text is redacted (internal/redact) before it is shortened.
//   - Every answer read is bounded: a successful one by Options.MaxAnswer
//     (64 MiB by default; past it ErrBadAnswer, not retried), an error
//     answer at 64 KiB, of which the message keeps the first 200 bytes,
//     and a transport error's message at 1 KiB; in time, by the
//     HTTPClient's timeout (the default's 60 s, body included) and the
//     context. Error prints the server's message and rule quoted.
//
// # Errors
//
// An error answer of the server is an *Error (errors.As) with the HTTP
// status, the server's rule, the entry at fault and its message. The
// sentinels, each errors.Is-able:
//
//   - ErrRejected: the server refused the request (a 4xx but 401, 408 and
//     429), or the client refused it before sending; nothing was recorded.
//     Fix the request: Error.Rule says what is wrong with it.
//   - ErrUnauthorized: 401: the token is missing or wrong (Options.Token).
//   - ErrUnavailable: every attempt failed on the transport or with 408,
//     429 or a 5xx. Maybe recorded: a lag.
//   - ErrBadAnswer: the answer is not the record API's (a redirect, a body
//     that is not its JSON, a record count that does not match). Maybe
//     recorded: check Options.Address names the pod.
//   - ErrClosed: the Client was closed.
//   - ErrInvalidOptions: Options.Validate refused the options.
//
// A call ended by its context returns an error wrapping ctx.Err(); its
// request may or may not have taken effect.
package client
