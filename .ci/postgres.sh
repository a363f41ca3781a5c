#!/usr/bin/env bash
# Makes sure a PostgreSQL answers on 127.0.0.1:5432 with trust auth and a
# database named test, for the integration tests of the SQL catalog on
# PostgreSQL. Starts the machine's cluster if it is stopped; installs one
# from Debian's packages if there is none.
set -euo pipefail

ready() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

if ! command -v pg_isready >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  hba=/etc/postgresql/$version/main/pg_hba.conf
  sed -i '1i host all all 127.0.0.1/32 trust' "$hba"
fi

if ! ready; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 1 60); do ready && break; sleep 1; done
fi
ready || { echo "PostgreSQL did not come up on 127.0.0.1:5432" >&2; exit 1; }

if ! psql -h 127.0.0.1 -U postgres -d postgres -tAc "select 1 from pg_database where datname='test'" | grep -q 1; then
  psql -h 127.0.0.1 -U postgres -d postgres -c "create database test" >/dev/null
fi
echo "PostgreSQL ready on 127.0.0.1:5432 (database test)"
