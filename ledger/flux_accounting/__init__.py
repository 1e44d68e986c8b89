"""flux-accounting's formats and transports: its SQLite databases (import), CSV and tables
for its commands, the priority plugin's payloads and the Flux job-list transport."""
