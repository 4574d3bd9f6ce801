-- Incremental pulls: per job, endpoint, request and filter, the newest value
-- of the incremental field (first_seen_at, say) that every earlier row has
-- been loaded up to. Written in the transaction of the page whose rows
-- advanced it, so it never runs ahead of the data.

CREATE TABLE watermarks (
    job        text        NOT NULL,
    endpoint   text        NOT NULL,
    request    text        NOT NULL,
    filter     text        NOT NULL,
    field      text        NOT NULL,
    value      timestamptz NOT NULL,
    run_id     bigint      REFERENCES runs,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (job, endpoint, request, filter, field)
);
COMMENT ON TABLE watermarks IS 'Incremental pulls: how far each task has loaded its incremental field; the next run asks only for rows past it.';
COMMENT ON COLUMN watermarks.job IS 'name of the job';
COMMENT ON COLUMN watermarks.endpoint IS 'catalog name of the endpoint';
COMMENT ON COLUMN watermarks.request IS 'what the task asks about: url and scope';
COMMENT ON COLUMN watermarks.filter IS 'the job''s own filter of the endpoint ('''' for none): another filter starts afresh';
COMMENT ON COLUMN watermarks.field IS 'the incremental field, e.g. first_seen_at';
COMMENT ON COLUMN watermarks.value IS 'every row with field at or before this value has been loaded';
COMMENT ON COLUMN watermarks.run_id IS 'the run that last advanced it (runs.run_id)';
COMMENT ON COLUMN watermarks.updated_at IS 'when it last advanced';
