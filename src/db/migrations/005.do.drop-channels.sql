-- Channels (upstreams) and prices now come from the gateway config file (GATEWAY_CONFIG, or the built-in
-- simulator config), reloaded on SIGHUP; see docs/gateway-config.md. Nothing reads or writes this table any
-- more, and keeping it would suggest that inserting a row adds a channel. ledger.channel_id never referenced
-- it (no foreign key) and stays as it is.
DROP TABLE IF EXISTS channels;
