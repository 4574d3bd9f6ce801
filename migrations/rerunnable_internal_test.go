package migrations

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRerunnableMigrationsSaySo: a migration Recovery tells to run again
// after it stopped midway says in its own file that it goes on where it
// stopped (the file is where a reader of the migration looks).
func TestRerunnableMigrationsSaySo(t *testing.T) {
	t.Parallel()
	for _, v := range rerunnable {
		var name string
		for _, m := range All() {
			if m.Version == v {
				name = m.Name
			}
		}
		require.NotEmpty(t, name, "no migration %d", v)
		text, err := files.ReadFile(name + ".up.sql")
		require.NoError(t, err)
		require.Contains(t, string(text), fmt.Sprintf("`etl migrate force %d` then `etl migrate up` goes on where it stopped", v-1))
	}
}
