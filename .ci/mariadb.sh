#!/usr/bin/env bash
# Makes sure a MariaDB answers on 127.0.0.1:3306 for root without a password
# and has a database named test, for reconcile's MySQL/MariaDB sink tests.
# Starts the machine's server if it is stopped; installs one from Debian's
# packages if there is none.
set -euo pipefail

ready() { mysqladmin -h 127.0.0.1 -P 3306 -uroot --connect-timeout=2 ping >/dev/null 2>&1; }

if ! ready; then
  if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
  fi
  service mariadb start >/dev/null 2>&1 || service mysql start >/dev/null 2>&1 || true
  for _ in $(seq 1 60); do ready && break; sleep 1; done
fi
ready || { echo "MariaDB did not come up on 127.0.0.1:3306" >&2; exit 1; }

mysql -h 127.0.0.1 -P 3306 -uroot -e "CREATE DATABASE IF NOT EXISTS test"
echo "MariaDB ready on 127.0.0.1:3306 (database test)"
