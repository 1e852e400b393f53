#!/bin/sh
# Creates Temporal's two PostgreSQL databases and brings their schemas to the newest version, as
# Temporal's own compose setup does. Idempotent: `create` and `setup-schema -v 0.0` on an existing
# database fail harmlessly (-q), `update-schema` applies only what is missing.
set -eu
: "${POSTGRES_SEEDS:?}" "${POSTGRES_USER:?}" "${SQL_PASSWORD:?}" "${DBNAME:?}" "${VISIBILITY_DBNAME:?}"
PORT="${DB_PORT:-5432}"
SCHEMA=/etc/temporal/schema/postgresql/v12
tool() { temporal-sql-tool --plugin postgres12 --ep "$POSTGRES_SEEDS" -u "$POSTGRES_USER" -p "$PORT" "$@"; }

until nc -z -w 5 "$POSTGRES_SEEDS" "$PORT"; do echo "waiting for PostgreSQL..."; sleep 1; done

tool --db "$DBNAME" -q create
tool --db "$DBNAME" -q setup-schema -v 0.0
tool --db "$DBNAME" update-schema -d "$SCHEMA/temporal/versioned"

tool --db "$VISIBILITY_DBNAME" -q create
tool --db "$VISIBILITY_DBNAME" -q setup-schema -v 0.0
tool --db "$VISIBILITY_DBNAME" update-schema -d "$SCHEMA/visibility/versioned"
echo "PostgreSQL schema setup complete"
