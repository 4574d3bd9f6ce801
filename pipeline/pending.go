package pipeline

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seoetl/etl/jobspec"
)

// Pending keeps the tasks that req.Reprocess asks for, by what the job's
// runs checkpointed for them (Task.Key): missing keeps the tasks no run
// finished, failed those tried whose latest try failed, was skipped or did
// not finish (its process died) (a task held, as the warehouse held its
// data, did not fail), all every task. The result is never nil.
func Pending(ctx context.Context, pool *pgxpool.Pool, job *jobspec.Job, tasks []jobspec.Task, reprocess string) ([]jobspec.Task, error) {
	if reprocess == "" {
		reprocess = jobspec.ReprocessMissing
	}
	if err := jobspec.CheckReprocess(reprocess); err != nil {
		return nil, err
	}
	if reprocess == jobspec.ReprocessAll {
		return tasks, nil
	}
	keys := make([]string, len(tasks))
	for i, t := range tasks {
		keys[i] = t.Key()
	}
	rows, err := pool.Query(ctx, `
		SELECT c.task, bool_or(c.status = 'done'),
		       (array_agg(c.status ORDER BY c.updated_at DESC))[1]
		  FROM task_checkpoints c JOIN runs r USING (run_id)
		 WHERE r.job = $1 AND c.task = ANY($2)
		 GROUP BY c.task`, job.Name, keys)
	if err != nil {
		return nil, fmt.Errorf("reading the checkpoints of job %s: %w", job.Name, NotMigrated(err))
	}
	type state struct {
		done   bool
		latest string
	}
	seen := map[string]state{}
	for rows.Next() {
		var k string
		var s state
		if err := rows.Scan(&k, &s.done, &s.latest); err != nil {
			return nil, err
		}
		seen[k] = s
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := []jobspec.Task{} // not nil: RunOptions.Tasks nil means the job's own
	for i, t := range tasks {
		s, ok := seen[keys[i]]
		switch {
		case reprocess == jobspec.ReprocessFailed && ok && s.latest != "done" && s.latest != "held":
			// (held: not sent, as the warehouse held its data)
			out = append(out, t)
		case reprocess != jobspec.ReprocessFailed && !s.done:
			out = append(out, t)
		}
	}
	return out, nil
}
