-- Each tenant's daily allowance of web searches and extracted pages (the `web` toolset). NULL
-- takes the installation's default (`web.searches_per_day`, `web.extracts_per_day`); 0 means
-- unlimited. The counts themselves live in Redis, per UTC day.
ALTER TABLE tenants
    ADD COLUMN web_searches_per_day integer CHECK (web_searches_per_day >= 0),
    ADD COLUMN web_extracts_per_day integer CHECK (web_extracts_per_day >= 0);
