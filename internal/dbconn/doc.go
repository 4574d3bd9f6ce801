// Package dbconn owns the runner's database connections: how many a
// Runner needs (NeedConns: a connection per page in flight, spares, the
// partitions' and the job locks' own), whether the server can give them
// (ReadRoom, OpenPools opens them ahead), and the page's connection
// (PageConns): taken before a page's request is sent, so a page the API
// answered, and charged for, always has a connection to load on, and
// given back once its rows committed. A server that cannot serve for a
// moment (Unavailable) is asked again with back-off (Backoff, MaxBackoff).
package dbconn
