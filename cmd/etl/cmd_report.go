package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seoetl/etl/internal/atomicfile"
	"github.com/seoetl/etl/jobspec"
	"github.com/seoetl/etl/report"
)

func newReportCmd(e *env) *cobra.Command {
	var o runOptions
	var out string
	var targets []string
	var months, top int
	var readURL string
	cmd := &cobra.Command{
		Use:   "report --out FILE.html [--jobs FILE] [--job NAME] [--targets URL,...] [--months N] [--top N]",
		Short: "Write an offline HTML report with charts of the warehouse",
		Long: `Write one self-contained HTML file: per target the authority score,
backlinks and referring domains over the months, new and lost links per
month and link velocity with its spikes; the competitor gap of each target
set; API units per day and month against the caps of the job spec; the
runs; listing problems opened, resolved and open. Each chart is inline SVG
with its numbers in a table beside it; the font is embedded and nothing
runs or is fetched, so the file opens offline in any browser and can be
mailed. The numbers come from the analytic views (docs/warehouse.md),
read as etl_analyst in a read-only transaction.

--job narrows the targets to the job's, and spend and runs to the job;
--targets names targets by url instead, as stored (repeat it, or separate
urls by commas; a quote is a quote, and a url holding a comma cannot be
named: use --job). Charts are drawn for the --top largest targets by
backlinks that have history (default 10); every target has a row in the
targets table. Caps come from --jobs when the file exists. The connecting
role must be granted etl_analyst.

` + exitLine(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if out == "" {
				return usageError(errors.New("--out FILE.html is required: where to write the report"))
			}
			if months < 1 || top < 1 {
				return usageError(fmt.Errorf("--months and --top must be at least 1, got %d and %d", months, top))
			}
			now, err := o.clock()
			if err != nil {
				return err
			}
			spec, err := reportSpec(o, cmd.Flags().Changed("jobs"), now)
			if err != nil {
				return err
			}
			urls, err := reportTargets(targets, cmd.Flags().Changed("targets"))
			if err != nil {
				return usageError(fmt.Errorf("--%w", err))
			}
			cfg, err := reportConfig(spec, o.job, urls)
			if err != nil {
				return err
			}
			cfg.Months, cfg.Top, cfg.Now = months, top, now
			pool, err := e.connectReader(ctx, readURL, o.databaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			data, err := report.Load(ctx, pool, cfg)
			var bad *report.ConfigError
			if errors.As(err, &bad) {
				return usageError(err)
			}
			if err != nil {
				return err
			}
			var b bytes.Buffer
			if err := report.Render(&b, data); err != nil {
				return err
			}
			if err := writeAtomically(out, b.Bytes()); err != nil {
				return err
			}
			charted := 0
			for _, t := range data.Targets {
				if t.Charted {
					charted++
				}
			}
			fmt.Fprintf(e.stdout, "report: %s (%d targets, %d with charts; months %s to %s; %d KiB)\n",
				shownPath(out), len(data.Targets), charted, data.From.Format("2006-01"), data.To.Format("2006-01"), (b.Len()+1023)/1024)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "the HTML file to write (replaced whole, never half written)")
	f.StringVar(&o.jobs, "jobs", "jobs.yaml", "job spec file: the job's targets and the caps (read when it exists)")
	f.StringVar(&o.job, "job", "", "report on this job's targets, spend and runs (default: every target and job)")
	f.StringArrayVar(&targets, "targets", nil, "report on these target urls, comma separated (default: the job's, or every target)")
	f.IntVar(&months, "months", report.DefaultMonths, "months covered, the current one included")
	f.IntVar(&top, "top", report.DefaultTop, "targets drawn in charts of their own, the largest by backlinks first")
	f.StringVar(&o.databaseURL, "database-url", "", "warehouse connection URL (default $DATABASE_URL)")
	f.StringVar(&readURL, "read-database-url", "", "read from this database, a standby say (default $ETL_READ_DATABASE_URL, else the warehouse)")
	f.StringVar(&o.now, "now", "", "pin the current time (RFC 3339 or YYYY-MM-DD)")
	_ = f.MarkHidden("now")
	return cmd
}

// reportSpec reads the job spec for the report's caps and the job's
// targets: required with --job or an explicit --jobs, else read when the
// file exists.
func reportSpec(o runOptions, explicit bool, now func() time.Time) (*jobspec.Spec, error) {
	if !explicit && o.job == "" {
		if _, err := os.Stat(o.jobs); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	return loadSpec(o.jobs, now())
}

// writeAtomically writes data to path through a temporary file in the
// same folder (mode 0666 less the umask, as cp would make it), renamed
// over path once complete.
func writeAtomically(path string, data []byte) error {
	tmp, err := atomicfile.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("--out: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// shownPath is a file name as printed: as it is when it reads plainly,
// else quoted (jobspec.Quote).
func shownPath(p string) string {
	if quoteable(p, false) {
		return jobspec.Quote(p)
	}
	return p
}

// reportTargets are the urls of --targets (or of /report's targets
// parameter): each value split at its commas, nothing else read into it
// (a '"' is part of a url). given says the flag or parameter was there:
// then it must name a url, and no url between its commas may be empty,
// so that --targets "" (a variable left empty) is refused as --targets
// "," is, rather than read as every target.
func reportTargets(values []string, given bool) ([]string, error) {
	var urls []string
	for _, v := range values {
		if strings.TrimSpace(strings.ReplaceAll(v, ",", "")) == "" {
			continue
		}
		for _, u := range strings.Split(v, ",") {
			if strings.TrimSpace(u) == "" {
				return nil, fmt.Errorf("targets %s holds an empty url (between commas, or at an end)", jobspec.Quote(v))
			}
			urls = append(urls, u)
		}
	}
	if given && len(urls) == 0 {
		return nil, errors.New("targets names no url: give urls separated by commas, or leave it out for every target")
	}
	return urls, nil
}

// reportCaps are the caps of spec for the report; none without a spec.
func reportCaps(spec *jobspec.Spec) report.Caps {
	if spec == nil {
		return report.Caps{}
	}
	c := report.Caps{Daily: spec.Budget.Daily, Monthly: spec.Budget.Monthly, JobMonthly: map[string]int64{}, PerRun: map[string]int64{}}
	for _, j := range spec.Jobs {
		c.JobMonthly[j.Name], c.PerRun[j.Name] = j.Caps.JobMonthly, j.Caps.PerRun
	}
	return c
}

// reportConfig is the report's Config for job (every job when "") and the
// target urls: the job's targets and target sets' urls when none are
// given; caps from spec (none without one).
func reportConfig(spec *jobspec.Spec, job string, targets []string) (report.Config, error) {
	cfg := report.Config{Job: job, Targets: targets, Caps: reportCaps(spec)}
	if job == "" || len(targets) > 0 {
		return cfg, nil
	}
	if spec == nil {
		return cfg, usageError(fmt.Errorf("--job %s: no job spec to read it from (--jobs)", job))
	}
	j, err := spec.Job(job)
	if err != nil {
		return cfg, usageError(err)
	}
	for _, t := range j.Targets {
		if !slices.Contains(cfg.Targets, t.URL) {
			cfg.Targets = append(cfg.Targets, t.URL)
		}
	}
	for _, s := range j.TargetSets {
		for _, u := range s.URLs {
			if !slices.Contains(cfg.Targets, u) {
				cfg.Targets = append(cfg.Targets, u)
			}
		}
	}
	return cfg, nil
}
