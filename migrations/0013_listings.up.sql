-- Local listings (spec 2.14, issue 16): the locations of each account,
-- versioned, and the problems the provider attaches to them. Everything is
-- keyed by (account, location_id), so two accounts' locations never
-- collide. Written by package load (Loader.ListingPage, Loader.ListingGone).

CREATE TABLE listing_versions (
    account                 text NOT NULL,
    location_id             text NOT NULL,
    valid_from              timestamptz NOT NULL,
    valid_to                timestamptz,
    observed_at             timestamptz NOT NULL,
    gone_at                 timestamptz,
    location_name           text,
    city                    text,
    address                 text,
    additional_address_info text,
    zip                     text,
    phone                   text,
    region                  text,
    website_url             text,
    country_code            text,
    status                  text,
    business_hours          jsonb,
    holiday_hours           jsonb,
    reopen_date             date,
    open_days               smallint NOT NULL CHECK (open_days BETWEEN 0 AND 7),
    holiday_count           smallint NOT NULL CHECK (holiday_count >= 0),
    content_hash            bytea NOT NULL,
    PRIMARY KEY (account, location_id, valid_from),
    CHECK (valid_to IS NULL OR valid_to > valid_from),
    CHECK (observed_at >= valid_from)
);
-- At most one current version per location.
CREATE UNIQUE INDEX listing_versions_current ON listing_versions (account, location_id) WHERE valid_to IS NULL;
CREATE INDEX listing_versions_valid_from ON listing_versions (valid_from);

COMMENT ON TABLE listing_versions IS 'Versions of the content of each business location of an account (spec 2.14): a new row only when the content changed between two observations; the current version has valid_to NULL. A location that left the account keeps its last version, marked by gone_at; nothing is deleted.';
COMMENT ON COLUMN listing_versions.account IS 'the account (accounts.name) the location belongs to; with location_id it names the location';
COMMENT ON COLUMN listing_versions.location_id IS 'the location''s id (spec 2.14 id), unique within the account only';
COMMENT ON COLUMN listing_versions.valid_from IS 'when this version was first observed';
COMMENT ON COLUMN listing_versions.valid_to IS 'when a later version (or the location''s return after it was gone) replaced this one; NULL for the current version';
COMMENT ON COLUMN listing_versions.observed_at IS 'when this version was last observed as it is';
COMMENT ON COLUMN listing_versions.gone_at IS 'when a complete pull of the account no longer listed the location; NULL while it is listed. Set on the current version only';
COMMENT ON COLUMN listing_versions.location_name IS 'locationName: the business name shown in listings (max 125 characters)';
COMMENT ON COLUMN listing_versions.city IS 'city (max 64 characters)';
COMMENT ON COLUMN listing_versions.address IS 'address: address line 1 (max 190 characters)';
COMMENT ON COLUMN listing_versions.additional_address_info IS 'additionalAddressInfo: address line 2 (max 64 characters); NULL when empty';
COMMENT ON COLUMN listing_versions.zip IS 'zip: the postal code; NULL when empty';
COMMENT ON COLUMN listing_versions.phone IS 'phone, with its international code';
COMMENT ON COLUMN listing_versions.region IS 'region: the highest administrative subdivision (state, province, prefecture); NULL when empty, as in countries without one';
COMMENT ON COLUMN listing_versions.website_url IS 'websiteUrl; NULL when empty';
COMMENT ON COLUMN listing_versions.country_code IS 'countryCode: the location''s country code (response only)';
COMMENT ON COLUMN listing_versions.status IS 'status (response only): COMPLETE, or another value the spec does not list. Pages of locations carry no status (spec 4.5): a version observed only through pages keeps the status last read from a single location, NULL if none was ever read';
COMMENT ON COLUMN listing_versions.business_hours IS 'businessHours as sent: an object with keys monday to sunday, each an array of {from, to} ranges (HH:MM; to earlier than from, or 00:00, runs past midnight); a weekday left out is closed; NULL when the location has none';
COMMENT ON COLUMN listing_versions.holiday_hours IS 'holidayHours as sent: an array of {type RANGE or CLOSED, day YYYY-MM-DD, times}; they override business_hours on their day; NULL when none';
COMMENT ON COLUMN listing_versions.reopen_date IS 'reopenDate: when a temporarily closed or seasonal business reopens; NULL when none';
COMMENT ON COLUMN listing_versions.open_days IS 'the number of weekdays of business_hours with at least one range (0 when business_hours is NULL)';
COMMENT ON COLUMN listing_versions.holiday_count IS 'the number of entries of holiday_hours (0 when NULL)';
COMMENT ON COLUMN listing_versions.content_hash IS 'SHA-256 of the version''s content (every field of spec 2.14 but id, status and errors); a new version starts when it or the status changes';

CREATE VIEW listings_current AS
SELECT account, location_id, gone_at IS NOT NULL AS gone, gone_at, valid_from, observed_at,
       location_name, city, address, additional_address_info, zip, phone, region, website_url,
       country_code, status, business_hours, holiday_hours, reopen_date, open_days, holiday_count,
       content_hash
FROM listing_versions
WHERE valid_to IS NULL;
COMMENT ON VIEW listings_current IS 'The current version of every location of every account, gone or not (see gone)';
COMMENT ON COLUMN listings_current.account IS 'the account the location belongs to';
COMMENT ON COLUMN listings_current.location_id IS 'the location''s id, unique within the account';
COMMENT ON COLUMN listings_current.gone IS 'true when the latest complete pull of the account no longer listed the location';
COMMENT ON COLUMN listings_current.gone_at IS 'when the location was found gone; NULL while listed';
COMMENT ON COLUMN listings_current.valid_from IS 'when the current content was first observed';
COMMENT ON COLUMN listings_current.observed_at IS 'when the current content was last observed';
COMMENT ON COLUMN listings_current.location_name IS 'locationName';
COMMENT ON COLUMN listings_current.city IS 'city';
COMMENT ON COLUMN listings_current.address IS 'address line 1';
COMMENT ON COLUMN listings_current.additional_address_info IS 'address line 2; NULL when empty';
COMMENT ON COLUMN listings_current.zip IS 'postal code; NULL when empty';
COMMENT ON COLUMN listings_current.phone IS 'phone, with its international code';
COMMENT ON COLUMN listings_current.region IS 'highest administrative subdivision; NULL when empty';
COMMENT ON COLUMN listings_current.website_url IS 'websiteUrl; NULL when empty';
COMMENT ON COLUMN listings_current.country_code IS 'countryCode';
COMMENT ON COLUMN listings_current.status IS 'status (COMPLETE or another value); NULL if never read';
COMMENT ON COLUMN listings_current.business_hours IS 'businessHours as sent (JSONB)';
COMMENT ON COLUMN listings_current.holiday_hours IS 'holidayHours as sent (JSONB)';
COMMENT ON COLUMN listings_current.reopen_date IS 'reopenDate';
COMMENT ON COLUMN listings_current.open_days IS 'weekdays of business_hours with at least one range';
COMMENT ON COLUMN listings_current.holiday_count IS 'entries of holiday_hours';
COMMENT ON COLUMN listings_current.content_hash IS 'SHA-256 of the content';

CREATE TABLE listing_problems (
    account       text NOT NULL,
    location_id   text NOT NULL,
    code          text NOT NULL,
    message       text NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at  timestamptz NOT NULL,
    resolved_at   timestamptz,
    PRIMARY KEY (account, location_id, code, message, first_seen_at),
    CHECK (last_seen_at >= first_seen_at),
    CHECK (resolved_at IS NULL OR resolved_at > last_seen_at)
);
-- At most one open occurrence of a problem per location.
CREATE UNIQUE INDEX listing_problems_open ON listing_problems (account, location_id, code, message) WHERE resolved_at IS NULL;
COMMENT ON TABLE listing_problems IS 'Problems the provider attached to a location (the errors array of spec 2.14), one row per occurrence: from the first observation that carried it to the first that did not (resolved_at), or still open (resolved_at NULL)';
COMMENT ON COLUMN listing_problems.account IS 'the account the location belongs to';
COMMENT ON COLUMN listing_problems.location_id IS 'the location''s id, unique within the account';
COMMENT ON COLUMN listing_problems.code IS 'the error''s code (the catalogue of codes is not shown by the spec)';
COMMENT ON COLUMN listing_problems.message IS 'the error''s message';
COMMENT ON COLUMN listing_problems.first_seen_at IS 'when an observation of the location first carried the problem: "open since"';
COMMENT ON COLUMN listing_problems.last_seen_at IS 'when an observation last carried it';
COMMENT ON COLUMN listing_problems.resolved_at IS 'when an observation of the location first no longer carried it, or the location was found gone; NULL while open';

-- The default privileges of 0003 grant etl_analyst SELECT on these already;
-- say it here too, for a database whose defaults were changed.
GRANT SELECT ON listing_versions, listings_current, listing_problems TO etl_analyst;
