// Package pipeline owns the job spec (jobs.yaml): parsing, validation with
// file:line in every message before any unit is spent, and expansion of a
// job into tasks (endpoint x target, keyword x country x month). It runs the
// tasks concurrently (errgroup under a limit): each task pages through the
// API with the extract client, decodes each response with transform, and
// loads each page with load in one transaction.
package pipeline
