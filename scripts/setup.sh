#!/usr/bin/env bash
# setup.sh — install what faultbench's targets and tools need, idempotently.
#
#   scripts/setup.sh                      everything: redis, postgres, galera, cassandra, hbase, staticcheck, chromium, sysbench, ssh, fuse,
#                                         faketime
#                                         (make test)
#   scripts/setup.sh --only demo          what `make demo` needs: Go alone (the demo's etcd members run inside
#                                         the faultbench binary); installs no system package, touches no service
#   scripts/setup.sh --only redis         redis-server and redis-cli (Debian's redis-server, redis-tools)
#   scripts/setup.sh --only postgres      PostgreSQL 15 and pg_auto_failover 2.0 (postgresql-15,
#                                         postgresql-15-auto-failover, pg-auto-failover-cli)
#   scripts/setup.sh --only galera        MariaDB 10.11 with Galera 4 (mariadb-server, galera-4, rsync)
#   scripts/setup.sh --only cassandra     Apache Cassandra's jars from Maven Central into the user's cache
#   scripts/setup.sh --only hbase         HBase's, Hadoop's (HDFS) and ZooKeeper's jars from Maven Central into
#                                         the user's cache
#   scripts/setup.sh --only staticcheck   staticcheck into $(go env GOPATH)/bin
#   scripts/setup.sh --only chromium      Debian's chromium (the report test opens report.html in it)
#   scripts/setup.sh --only sysbench      Debian's sysbench (bench/vs-peers.sh's peer for SQL)
#   scripts/setup.sh --only ssh           Debian's openssh-server and nftables (the distributed test runs one sshd per
#                                         network namespace; docs/distributed.md)
#   scripts/setup.sh --only fuse          Debian's fuse3 (fusermount3: the file-system layer of disk faults,
#                                         `cluster up --disk-faults`; docs/faults.md)
#   scripts/setup.sh --only faketime      Debian's libfaketime (libfaketime.so.1: the clock faults' preload,
#                                         `cluster up --clock-faults`; docs/faults.md)
#
# Installs only what is missing (apt-get update first, and only then), runs
# as root or through sudo, and prints nothing when all went well. Without
# --only, every missing Debian package is installed by one apt-get run,
# beside which the downloads that need none run in the background
# (staticcheck; the Cassandra and HBase jars when java and mvn are there). A system
# redis service that the package starts (config /etc/redis/redis.conf,
# port 6379) is stopped: faultbench starts its own redis-server processes.
# Likewise Debian's PostgreSQL clusters and MariaDB service are stopped and
# set not to start at boot: faultbench runs its own postgres, pg_autoctl and
# mariadbd processes on free ports. The ssh service that installing
# openssh-server starts is stopped and disabled again (only when this script
# installed it): faultbench starts its own sshd processes in namespaces.
# Cassandra (org.apache.cassandra:cassandra-all, pinned below) and its
# dependency jars are resolved by Maven from Maven Central only, checksums
# enforced, into ${XDG_CACHE_HOME:-~/.cache}/faultbench/cassandra-VERSION/lib.
# HBase (org.apache.hbase:hbase-server and hbase-thrift, pinned below), the
# HDFS jars (org.apache.hadoop:hadoop-hdfs and hadoop-common) and ZooKeeper
# (a dependency of hbase-zookeeper) are resolved the same way into
# ${XDG_CACHE_HOME:-~/.cache}/faultbench/hbase-VERSION/lib.
set -euo pipefail

STATICCHECK_VERSION=v0.8.2
CASSANDRA_VERSION=5.0.9 # keep equal to cassandra.Version in internal/launcher/cassandra
HBASE_VERSION=2.6.1 # keep equal to hbase.Version in internal/launcher/hbase
# the Hadoop release HBase 2.6.1's -hadoop3 artifacts are built against; the
# hbase-thrift jar exists only as the default (Hadoop 2) artifact on Maven
# Central, so its Hadoop dependencies are excluded and these are used
HBASE_HADOOP_VERSION=3.3.5
MAVEN_CENTRAL=https://repo.maven.apache.org/maven2
REDIS_MIN_MAJOR=7 # the launchers use --cluster-port and CLUSTER ADDSLOTSRANGE (Redis 7.0)

log=$(mktemp -t faultbench-setup.XXXXXX)
# wait: a step still running in the background (in_background) ends before
# the script does, also when another step failed
trap 'wait; rm -f "$log"' EXIT

die() {
	echo "setup.sh: $*" >&2
	if [ -s "$log" ]; then
		echo "---- output of the failed step ----" >&2
		tail -n 40 "$log" >&2
	fi
	exit 1
}

usage() { # the comment at the top of this file
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
}

# as_root runs a command as root: directly, or through sudo.
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		SUDO=(sudo)
	fi
fi
as_root() {
	if [ "$(id -u)" -ne 0 ] && [ ${#SUDO[@]} -eq 0 ]; then
		die "need root to run '$*' (not root and no sudo): run setup.sh as root"
	fi
	${SUDO[@]+"${SUDO[@]}"} "$@"
}

# apt_install installs the packages named (nothing when none is).
apt_updated=0
apt_install() {
	[ $# -gt 0 ] || return 0
	command -v apt-get >/dev/null 2>&1 ||
		die "apt-get not found: install $* with your system's package manager"
	if [ "$apt_updated" -eq 0 ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$log" 2>&1 ||
			die "apt-get update failed"
		apt_updated=1
	fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		-o DPkg::Lock::Timeout=300 "$@" >>"$log" 2>&1 ||
		die "apt-get install $* failed"
}

# info_field FIELD reads "FIELD:value" from the INFO text on stdin.
info_field() {
	tr -d '\r' | sed -n "s/^$1://p"
}

# stop_system_redis stops a redis-server on 127.0.0.1:6379 that runs with
# Debian's /etc/redis/redis.conf (the service the package starts); any other
# server on that port is left alone.
stop_system_redis() {
	local info cfg pid i
	info=$(timeout 5 redis-cli -h 127.0.0.1 -p 6379 INFO server 2>/dev/null) || return 0
	cfg=$(printf '%s\n' "$info" | info_field config_file)
	pid=$(printf '%s\n' "$info" | info_field process_id)
	[ "$cfg" = /etc/redis/redis.conf ] || return 0
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	if command -v service >/dev/null 2>&1; then
		as_root service redis-server stop >>"$log" 2>&1 || true
	fi
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		as_root systemctl disable --now redis-server >>"$log" 2>&1 || true
	fi
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || return 0
		if [ "$i" -eq 20 ]; then
			as_root kill "$pid" >>"$log" 2>&1 || true
		fi
		sleep 0.1
	done
	die "could not stop the system redis-server (pid $pid, /etc/redis/redis.conf) on port 6379"
}

# want_NAME prints the Debian packages setup_NAME would install (none when
# all is there): make test's setup installs them all in one apt-get run.
want_redis() {
	if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
		echo redis-server redis-tools
	fi
}

setup_redis() {
	apt_install $(want_redis)
	command -v redis-server >/dev/null 2>&1 || die "redis-server not on PATH after installing redis-server"
	local version major
	version=$(redis-server --version 2>&1 | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
	major=${version%%.*}
	if ! [[ "$major" =~ ^[0-9]+$ ]] || [ "$major" -lt "$REDIS_MIN_MAJOR" ]; then
		die "redis-server ${version:-of unknown version} is too old: faultbench needs Redis >= ${REDIS_MIN_MAJOR}.0 (Debian 12 or later ships it)"
	fi
	stop_system_redis
}

PG_MAJOR=15 # pg_auto_failover 2.0 as Debian 12 packages it, for PostgreSQL 15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin

# stop_system_postgres stops the clusters Debian's postgresql-common made
# (pg_lsclusters; e.g. 15/main on port 5432) and sets them to start
# manually; postgres processes that faultbench or anyone else started from
# their own data directories are not touched.
stop_system_postgres() {
	command -v pg_lsclusters >/dev/null 2>&1 || return 0
	local ver name port status rest
	while read -r ver name port status rest; do
		[[ "$ver" =~ ^[0-9]+$ ]] || continue
		if [ "$status" = online ]; then
			as_root pg_ctlcluster "$ver" "$name" stop >>"$log" 2>&1 ||
				die "could not stop the system PostgreSQL cluster $ver/$name on port $port"
		fi
		if [ -f "/etc/postgresql/$ver/$name/start.conf" ] &&
			[ "$(grep -v '^#' "/etc/postgresql/$ver/$name/start.conf" | tr -d '[:space:]')" = auto ]; then
			printf '# set by faultbench scripts/setup.sh: faultbench runs its own postgres processes\nmanual\n' |
				as_root tee "/etc/postgresql/$ver/$name/start.conf" >/dev/null
		fi
	done < <(pg_lsclusters --no-header 2>/dev/null)
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		as_root systemctl disable --now postgresql >>"$log" 2>&1 || true
	fi
}

want_postgres() {
	[ -x "$PG_BIN/postgres" ] && [ -x "$PG_BIN/pg_ctl" ] || echo "postgresql-$PG_MAJOR"
	[ -f "/usr/lib/postgresql/$PG_MAJOR/lib/pgautofailover.so" ] || echo "postgresql-$PG_MAJOR-auto-failover"
	command -v pg_autoctl >/dev/null 2>&1 || echo pg-auto-failover-cli
}

setup_postgres() {
	apt_install $(want_postgres)
	[ -x "$PG_BIN/postgres" ] || die "$PG_BIN/postgres missing after installing postgresql-$PG_MAJOR"
	command -v pg_autoctl >/dev/null 2>&1 || die "pg_autoctl still not on PATH after installing pg-auto-failover-cli"
	id postgres >/dev/null 2>&1 || die "no 'postgres' user after installing postgresql-$PG_MAJOR: faultbench runs postgres as that user"
	stop_system_postgres
}

# stop_system_mariadb stops the MariaDB service the package starts (pid file
# /run/mysqld/mysqld.pid, port 3306) and disables it; mariadbd processes
# with other pid files are left alone.
stop_system_mariadb() {
	local pid i
	if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
		as_root systemctl disable --now mariadb >>"$log" 2>&1 || true
	elif command -v update-rc.d >/dev/null 2>&1 && [ -e /etc/init.d/mariadb ]; then
		as_root update-rc.d mariadb disable >>"$log" 2>&1 || true
	fi
	pid=$(cat /run/mysqld/mysqld.pid 2>/dev/null || true)
	[[ "$pid" =~ ^[0-9]+$ ]] || return 0
	kill -0 "$pid" 2>/dev/null || return 0
	if command -v service >/dev/null 2>&1; then
		as_root service mariadb stop >>"$log" 2>&1 || true
	fi
	for i in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || return 0
		if [ "$i" -eq 50 ]; then
			as_root kill "$pid" >>"$log" 2>&1 || true
		fi
		sleep 0.1
	done
	die "could not stop the system mariadbd (pid $pid, /run/mysqld/mysqld.pid)"
}

want_galera() {
	command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || echo mariadb-server
	[ -f /usr/lib/galera/libgalera_smm.so ] || echo galera-4
	command -v rsync >/dev/null 2>&1 || echo rsync # SST by wsrep_sst_rsync, offline
}

setup_galera() {
	apt_install $(want_galera)
	[ -x /usr/sbin/mariadbd ] || die "/usr/sbin/mariadbd missing after installing mariadb-server"
	[ -f /usr/lib/galera/libgalera_smm.so ] || die "/usr/lib/galera/libgalera_smm.so missing after installing galera-4"
	id mysql >/dev/null 2>&1 || die "no 'mysql' user after installing mariadb-server: faultbench runs mariadbd as that user"
	stop_system_mariadb
}

# in_background NAME COMMAND... runs COMMAND in a subshell beside the
# script's other steps, with a log of its own (a failure prints that step's
# output); wait_background waits for all of them.
bg_pids=()
bg_names=()
in_background() {
	local name=$1
	shift
	(
		log=$(mktemp -t "faultbench-setup-$name.XXXXXX")
		trap 'rm -f "$log"' EXIT
		"$@"
	) &
	bg_pids+=("$!")
	bg_names+=("$name")
}

wait_background() {
	local i failed=()
	for i in "${!bg_pids[@]}"; do
		wait "${bg_pids[$i]}" || failed+=("${bg_names[$i]}")
	done
	bg_pids=()
	bg_names=()
	if [ ${#failed[@]} -gt 0 ]; then
		echo "setup.sh: failed: ${failed[*]} (the reason is above)" >&2
		exit 1
	fi
}

# want_maven: what resolving jars from Maven Central needs (java and mvn)
want_maven() {
	command -v java >/dev/null 2>&1 || echo openjdk-17-jre-headless
	command -v mvn >/dev/null 2>&1 || echo maven
}

cassandra_lib() {
	echo "${XDG_CACHE_HOME:-$HOME/.cache}/faultbench/cassandra-$CASSANDRA_VERSION/lib"
}

want_cassandra() {
	[ -f "$(cassandra_lib)/.complete" ] || want_maven
}

# setup_cassandra resolves cassandra-all and its runtime dependencies with
# Maven, from Maven Central alone (a mirror of every repository onto it) and
# with strict checksums, and copies the jars into the cache directory the
# launcher reads. A finished copy is marked by lib/.complete; with the marker
# present nothing is done.
setup_cassandra() {
	local dir lib tmp major
	lib=$(cassandra_lib)
	dir=$(dirname "$lib")
	[ -f "$lib/.complete" ] && return 0
	apt_install $(want_maven)
	major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
	if ! [[ "$major" =~ ^[0-9]+$ ]] || [ "$major" -lt 11 ] || [ "$major" -gt 17 ]; then
		die "java ${major:-of unknown version} on PATH: Cassandra $CASSANDRA_VERSION runs on Java 11 or 17 (apt-get install openjdk-17-jre-headless)"
	fi
	tmp=$(mktemp -d -t faultbench-cassandra.XXXXXX)
	# shellcheck disable=SC2064 # expand now: tmp is local
	trap "wait; rm -rf '$tmp' '$log'" EXIT
	cat >"$tmp/settings.xml" <<EOF_SETTINGS
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>central-only</id><mirrorOf>*</mirrorOf><url>$MAVEN_CENTRAL</url></mirror>
  </mirrors>
</settings>
EOF_SETTINGS
	cat >"$tmp/pom.xml" <<EOF_POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>faultbench</groupId>
  <artifactId>cassandra-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.cassandra</groupId>
      <artifactId>cassandra-all</artifactId>
      <version>$CASSANDRA_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF_POM
	rm -rf "$lib.partial"
	mkdir -p "$dir"
	(cd "$tmp" && mvn -B -q -s "$tmp/settings.xml" --strict-checksums \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$lib.partial") >>"$log" 2>&1 ||
		die "mvn could not resolve org.apache.cassandra:cassandra-all:$CASSANDRA_VERSION from Maven Central"
	[ -f "$lib.partial/cassandra-all-$CASSANDRA_VERSION.jar" ] ||
		die "mvn ran but cassandra-all-$CASSANDRA_VERSION.jar is not in $lib.partial"
	rm -rf "$lib"
	mv "$lib.partial" "$lib"
	echo "org.apache.cassandra:cassandra-all:$CASSANDRA_VERSION" >"$lib/.complete"
	rm -rf "$tmp"
}

# maven_copy_jars DIR ARTIFACT_XML NAME copies the runtime jars of the
# dependencies in ARTIFACT_XML (the <dependency> elements of a pom), resolved
# from Maven Central alone with strict checksums, into DIR.partial; NAME
# names the set in messages.
maven_copy_jars() {
	local out=$1 deps=$2 name=$3 tmp
	if ! command -v java >/dev/null 2>&1; then
		apt_install openjdk-17-jre-headless
	fi
	if ! command -v mvn >/dev/null 2>&1; then
		apt_install maven
	fi
	tmp=$(mktemp -d -t faultbench-jars.XXXXXX)
	cat >"$tmp/settings.xml" <<EOF_SETTINGS
<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">
  <mirrors>
    <mirror><id>central-only</id><mirrorOf>*</mirrorOf><url>$MAVEN_CENTRAL</url></mirror>
  </mirrors>
</settings>
EOF_SETTINGS
	cat >"$tmp/pom.xml" <<EOF_POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>faultbench</groupId>
  <artifactId>$name-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
$deps
  </dependencies>
</project>
EOF_POM
	rm -rf "$out.partial"
	mkdir -p "$(dirname "$out")"
	if ! (cd "$tmp" && mvn -B -q -s "$tmp/settings.xml" --strict-checksums \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$out.partial") >>"$log" 2>&1; then
		rm -rf "$tmp"
		die "mvn could not resolve the $name jars from Maven Central"
	fi
	rm -rf "$tmp"
}

# setup_hbase resolves HBase (server and Thrift2 gateway), HDFS and
# ZooKeeper into one jar directory the hbase launcher reads; like
# setup_cassandra it does nothing once lib/.complete is there.
setup_hbase() {
	local cache dir lib major
	cache=${XDG_CACHE_HOME:-$HOME/.cache}
	dir="$cache/faultbench/hbase-$HBASE_VERSION"
	lib="$dir/lib"
	[ -f "$lib/.complete" ] && return 0
	if command -v java >/dev/null 2>&1; then
		major=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
		if ! [[ "$major" =~ ^[0-9]+$ ]] || [ "$major" -lt 11 ] || [ "$major" -gt 17 ]; then
			die "java ${major:-of unknown version} on PATH: HBase $HBASE_VERSION runs here on Java 11 or 17 (apt-get install openjdk-17-jre-headless)"
		fi
	fi
	maven_copy_jars "$lib" "
    <dependency><groupId>org.apache.hbase</groupId><artifactId>hbase-server</artifactId><version>$HBASE_VERSION-hadoop3</version></dependency>
    <dependency><groupId>org.apache.hbase</groupId><artifactId>hbase-thrift</artifactId><version>$HBASE_VERSION</version>
      <exclusions><exclusion><groupId>org.apache.hadoop</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs</artifactId><version>$HBASE_HADOOP_VERSION</version></dependency>
    <dependency><groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId><version>$HBASE_HADOOP_VERSION</version></dependency>" hbase
	local jar
	for jar in "hbase-server-$HBASE_VERSION-hadoop3.jar" "hbase-thrift-$HBASE_VERSION.jar" \
		"hadoop-hdfs-$HBASE_HADOOP_VERSION.jar" "hadoop-common-$HBASE_HADOOP_VERSION.jar"; do
		[ -f "$lib.partial/$jar" ] || die "mvn ran but $jar is not in $lib.partial"
	done
	ls "$lib.partial"/zookeeper-3.*.jar >/dev/null 2>&1 || die "mvn ran but no zookeeper-3.*.jar is in $lib.partial"
	rm -rf "$lib"
	mv "$lib.partial" "$lib"
	echo "org.apache.hbase:hbase-server:$HBASE_VERSION-hadoop3 hbase-thrift:$HBASE_VERSION hadoop:$HBASE_HADOOP_VERSION" >"$lib/.complete"
}

# setup_jars resolves the Cassandra jars, then HBase's: one Maven after
# the other (they share the local repository ~/.m2)
setup_jars() {
	setup_cassandra
	setup_hbase
}

# setup_demo checks what make demo needs: the go command (the build then
# downloads the modules it needs). etcd is compiled into the faultbench
# binary, which runs the demo's members itself (faultbench node etcd).
setup_demo() {
	command -v go >/dev/null 2>&1 || die "go not found on PATH: install Go first (https://go.dev/doc/install); the demo needs nothing else"
}

setup_staticcheck() {
	command -v go >/dev/null 2>&1 || die "go not found on PATH: install Go first"
	local gopath
	gopath=$(go env GOPATH)
	[ -n "$gopath" ] || die "go env GOPATH is empty"
	if [ ! -x "$gopath/bin/staticcheck" ]; then
		go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" >>"$log" 2>&1 ||
			die "go install staticcheck@$STATICCHECK_VERSION failed"
	fi
}

want_chromium() {
	command -v chromium >/dev/null 2>&1 || echo chromium
}

setup_chromium() {
	apt_install $(want_chromium)
	command -v chromium >/dev/null 2>&1 || die "chromium not on PATH after installing chromium"
}

want_sysbench() {
	command -v sysbench >/dev/null 2>&1 || echo sysbench
}

setup_sysbench() {
	apt_install $(want_sysbench)
	command -v sysbench >/dev/null 2>&1 || die "sysbench not on PATH after installing sysbench"
}

want_ssh() {
	[ -x /usr/sbin/sshd ] || echo openssh-server
	# nft: network faults on nodes of inventory hosts are nftables rules
	# applied there with `nft -f -` (the test hosts are namespaces of this machine)
	command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || echo nftables
}

# setup_ssh installs sshd and nft; the system sshd that installing
# openssh-server starts (port 22) is stopped and disabled, by this call or
# by the one after make test's combined install (ssh_installed=1).
ssh_installed=0
setup_ssh() {
	local want
	want=$(want_ssh)
	[[ " $want " = *" openssh-server "* ]] && ssh_installed=1
	apt_install $want
	[ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd missing after installing openssh-server"
	command -v nft >/dev/null 2>&1 || [ -x /usr/sbin/nft ] || die "/usr/sbin/nft missing after installing nftables"
	if [ "$ssh_installed" -eq 1 ]; then
		# the package starts a system sshd on port 22: faultbench does not want it
		as_root service ssh stop >>"$log" 2>&1 || true
		if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
			as_root systemctl disable --now ssh >>"$log" 2>&1 || true
		fi
	fi
}

want_fuse() {
	# fusermount3: the disk-fault file system (internal/diskfs) mounts and
	# unmounts through it
	command -v fusermount3 >/dev/null 2>&1 || command -v fusermount >/dev/null 2>&1 || echo fuse3
}

setup_fuse() {
	apt_install $(want_fuse)
	command -v fusermount3 >/dev/null 2>&1 || command -v fusermount >/dev/null 2>&1 ||
		die "fusermount3 not on PATH after installing fuse3"
}

# have_faketime: libfaketime.so.1 is there (nodes started for clock faults,
# internal/launcher option clock: faketime, run with it preloaded)
have_faketime() {
	local lib
	for lib in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
		[ -f "$lib" ] && return 0
	done
	return 1
}

want_faketime() {
	have_faketime || echo libfaketime
}

setup_faketime() {
	apt_install $(want_faketime)
	have_faketime || die "libfaketime.so.1 missing after installing libfaketime"
}

only=""
while [ $# -gt 0 ]; do
	case "$1" in
	--only)
		[ $# -ge 2 ] || die "--only needs one of: demo, redis, postgres, galera, cassandra, hbase, staticcheck, chromium, sysbench, ssh, fuse, faketime"
		only=$2
		shift 2
		;;
	--only=*)
		only=${1#--only=}
		shift
		;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		die "unknown argument '$1' (see --help)"
		;;
	esac
done

case "$only" in
"")
	# Everything, the independent steps side by side: staticcheck (a
	# download and a compile) and, when java and mvn are there, the
	# Cassandra jars (downloads) run in the background while one apt-get
	# run installs every Debian package that is missing (one update, one
	# dpkg run and one round of triggers instead of one per target); then
	# each target's own steps (checks, stopping the services the packages
	# started) find their packages installed.
	in_background staticcheck setup_staticcheck
	jars_now=0
	if [ -z "$(want_maven)" ]; then
		in_background jars setup_jars
		jars_now=1
	fi
	ssh_want=$(want_ssh)
	[[ " $ssh_want " = *" openssh-server "* ]] && ssh_installed=1
	# shellcheck disable=SC2046 # package names: split on purpose
	apt_install $(want_redis) $(want_postgres) $(want_galera) $(want_cassandra) $(want_chromium) \
		$(want_sysbench) $ssh_want $(want_fuse) $(want_faketime)
	setup_redis
	setup_postgres
	setup_galera
	setup_chromium
	setup_sysbench
	setup_ssh
	setup_fuse
	setup_faketime
	if [ "$jars_now" -eq 0 ]; then
		setup_jars
	fi
	wait_background
	;;
demo) setup_demo ;;
redis) setup_redis ;;
postgres) setup_postgres ;;
galera) setup_galera ;;
cassandra) setup_cassandra ;;
hbase) setup_hbase ;;
staticcheck) setup_staticcheck ;;
chromium) setup_chromium ;;
sysbench) setup_sysbench ;;
ssh) setup_ssh ;;
fuse) setup_fuse ;;
faketime) setup_faketime ;;
*) die "--only $only: want demo, redis, postgres, galera, cassandra, hbase, staticcheck, chromium, sysbench, ssh, fuse or faketime" ;;
esac
