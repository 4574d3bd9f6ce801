package localwh

import (
	"errors"
	"net/url"
	"time"
)

// Commands of the warehouse protocol, what Warehouse.Dial sends.
const (
	// Use takes a lease: the warehouse runs at least until the connection
	// lets go of it (Conn.Release) or closes.
	Use = "use"
	// Up keeps the warehouse running until Down.
	Up = "up"
	// Down stops it now; Conn.WaitStopped waits for the stop.
	Down = "down"
	// Status asks what runs.
	Status = "status"
)

// Answers of the warehouse protocol.
const (
	whDone     = "done"
	whBusy     = "busy"
	whStaying  = "staying"
	whStopping = "stopping"
	whStopped  = "stopped"
)

// maxSocketPath is the longest Unix socket path (sun_path holds 108 bytes
// with the terminating NUL).
const maxSocketPath = 107

// State is what the warehouse runs, as it answers and as local.json holds
// it.
type State struct {
	PID         int       `json:"pid"`
	Started     time.Time `json:"started"`
	DatabaseURL string    `json:"database_url"`
	APIURL      string    `json:"api_url"`
	APIKey      string    `json:"api_key"`
	// DataDir is the cluster folder (pgcluster.Place): the local folder's
	// pg, or a folder under --data-root.
	DataDir string `json:"data_dir"`
	Log     string `json:"log"`
	// Kept is set by `etl local up`: it runs until `etl local down`.
	Kept bool `json:"kept"`
	// Users counts the commands using it now (etl local run, psql).
	Users int `json:"users"`
}

// DatabaseURLShown is DatabaseURL as logs and outputs may show it:
// without its password.
func (s State) DatabaseURLShown() string { return withoutPassword(s.DatabaseURL) }

// ErrNotRunning is returned (wrapped) by Warehouse.Dial when nothing runs and
// it was not asked to start anything.
var ErrNotRunning = errors.New("the local warehouse is not running")

// withoutPassword is a connection URL as logs may show it.
func withoutPassword(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(a database URL)"
	}
	return u.Redacted()
}
