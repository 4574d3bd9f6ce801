// Command etl collects SEO data from the data API into a PostgreSQL
// warehouse. See docs/commands.md for the sub-commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// The first SIGINT/SIGTERM cancels the context: runs finish the pages
	// they are loading and stop. A second one exits at once (130), which
	// is safe too: a page that did not commit is fetched again on resume.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	os.Exit(runProcess(context.Background(), process{signals: sigs, exit: os.Exit},
		os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.Getenv))
}
