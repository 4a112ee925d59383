// setupFiles of the `embedded` jest project: every gateway the harness starts runs on embedded PGlite.
process.env.GATEWAY_TEST_DB_MODE = 'embedded';
