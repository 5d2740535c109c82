# Shared by scripts/*: paths, the Kafka pin, environment checks with messages that name the fix.
# shellcheck shell=bash
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KAFKA_VERSION="${KAFKA_VERSION:-$(sed -n 's#.*<kafka.version>\(.*\)</kafka.version>.*#\1#p' "$ROOT/scripts/kafka/pom.xml")}"
export KAFKA_VERSION
KAFKA_HOME="${KAFKA_HOME:-$ROOT/build/kafka-$KAFKA_VERSION}"
VENV="${KSHIM_VENV:-$ROOT/.venv}"

die() { echo "kshim setup: $*" >&2; exit 2; }
say() { echo "[kshim] $*" >&2; }

pick_python() {
  local c
  for c in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
    [ -n "$c" ] || continue
    if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      echo "$c"; return 0
    fi
  done
  die "no Python 3.11 or newer found: install python3.11 (Debian: apt-get install python3.11 python3.11-venv) or set PYTHON=/path/to/python3.11"
}

check_java() {
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java" out major
  command -v "$java" >/dev/null 2>&1 || die "no Java found: install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
  out="$("$java" -version 2>&1 | head -1)"
  major="$(echo "$out" | sed -n 's/.*version "\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1 \2/p')"
  set -- $major
  if [ "${1:-0}" = "1" ]; then major="${2:-0}"; else major="${1:-0}"; fi
  [ "$major" -ge 17 ] 2>/dev/null || die "Java $major found ($out), Kafka $KAFKA_VERSION needs Java 17 or newer: install openjdk-17-jdk-headless and put it first on PATH, or set JAVA_HOME"
  command -v javac >/dev/null 2>&1 || [ -x "${JAVA_HOME:-/nonexistent}/bin/javac" ] || die "no javac found: install a full JDK 17+ (Debian: apt-get install openjdk-17-jdk-headless), not only a JRE"
}

check_maven() {
  command -v mvn >/dev/null 2>&1 || die "no Maven found: install Maven 3.6+ (Debian: apt-get install maven); it resolves Apache Kafka $KAFKA_VERSION from Maven Central"
}

sha_of() { cat "$@" | sha256sum | cut -c1-16; }
