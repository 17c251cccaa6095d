#!/usr/bin/env bash
# tuner_readonly.sh — a store the tuner cannot write: on a read-only file system (a
# read-only bind mount, as root), or one the user has no write access to (as another
# user when root, else by taking write permission away). The commands that only read
# (list, show, trials, best, logs, serve) work; those that write say why they cannot;
# the store is never changed.
#
#   tuner_readonly.sh BIN_DIR WORKDIR
#
# Each case prints "ok NAME" or "FAIL NAME: why"; the last line is "N passed, N failed".
set -u
. "$(dirname "$0")/../check.sh"  # ok, fail, check, check_summary, count_state, ...
BIN=$1
WORK=$2
TUNER="$BIN/tuner"
rm -rf "$WORK" && mkdir -p "$WORK" || exit 1
cd "$WORK" || exit 1

MOUNT=""
SERVER=""
ROOT_TMP=""
cleanup() {
  [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null && wait "$SERVER" 2>/dev/null
  [ -n "$MOUNT" ] && umount "$MOUNT" 2>/dev/null
  [ -n "$ROOT_TMP" ] && rm -rf "$ROOT_TMP"
  chmod -R u+w "$WORK" 2>/dev/null
}
trap cleanup EXIT

# A store with a finished study (two trials) and one only created.
mkdir -p store
spec() { # spec NAME MAX_TRIALS
  cat >"$1.json" <<JSON
{"jobId": "$1", "trainingInput": {"jobDir": "$WORK/runs/$1",
  "command": ["/bin/sh", "-c", "echo chatter; echo '{\"score\": \"0.5\"}' > \$CLOUD_ML_HP_METRIC_FILE"],
  "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "score", "maxTrials": $2,
    "maxParallelTrials": 1, "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}}
JSON
}
spec done 2
spec waiting 2
"$TUNER" run done.json --db=store/t.db --quiet --dashboard=off >/dev/null 2>&1
"$TUNER" create waiting.json --db=store/t.db >/dev/null
sum_before=$(sha256sum store/t.db | cut -d' ' -f1)

# not_a_store LABEL DB SAYS: every reading command on DB exits 1 saying SAYS, and DB is
# left as it was.
not_a_store() {
  local label=$1 db=$2 says=$3 sum out rc
  sum=$(sha256sum "$db" | cut -d' ' -f1)
  for c in list "show done" "trials done" "best done" "logs done 1"; do
    # shellcheck disable=SC2086
    out=$("$TUNER" $c --db="$db" 2>&1); rc=$?
    if [ $rc -eq 1 ] && grep -q "$says" <<<"$out"; then
      ok "${label}_${c%% *}"
    else
      fail "${label}_${c%% *}" "exit $rc: $out"
    fi
  done
  check "${label}_unchanged" test "$(sha256sum "$db" | cut -d' ' -f1)" = "$sum"
}
# An empty file is not a store: the reading commands say so and leave it empty (st_open
# would have written a new schema into it).
: >empty.db
not_a_store empty_store empty.db "empty.db is an empty file, not a tuner store"
check empty_store_left_empty test ! -s empty.db
# Nor is an SQLite file with no tables (what a `tuner create` that failed on a full disk
# leaves, or another program's new database): nothing is written into it (no schema).
python3 -c "import sqlite3; c = sqlite3.connect('other.db'); c.execute('PRAGMA user_version = 3'); c.commit()"
not_a_store foreign_sqlite other.db "other.db holds no tuner store"

# read_only_checks LABEL DB [RUNAS...]: every command against DB as RUNAS.
read_only_checks() {
  local label=$1 db=$2
  shift 2
  local T=("$@" "$TUNER")
  local out
  out=$("${T[@]}" list --db="$db" 2>&1)
  check "${label}_list" grep -q "^done .*SUCCEEDED" <<<"$out"
  out=$("${T[@]}" show done --db="$db" 2>&1)
  check "${label}_show" grep -q "state: *SUCCEEDED" <<<"$out"
  check "${label}_trials" test "$("${T[@]}" trials done --db="$db" --format=csv | grep -c SUCCEEDED)" -eq 2
  check "${label}_best" grep -q "\"objective\": 0.5" <<<"$("${T[@]}" best done --db="$db" --format=json)"
  if "$@" test -r "$WORK/runs/done/1/logs/chief-0.log"; then
    check "${label}_logs" grep -q chatter <<<"$("${T[@]}" logs done 1 --db="$db" 2>&1)"
  fi
  out=$("${T[@]}" cancel waiting --db="$db" 2>&1); local rc=$?
  check "${label}_cancel_refused" test $rc -ne 0
  check "${label}_cancel_says_why" grep -q "read-only here.*run it where the store can be written" <<<"$out"
  out=$("${T[@]}" create waiting.json --db="$db" 2>&1); rc=$?
  check "${label}_create_refused" test $rc -ne 0
  check "${label}_create_says_why" grep -q "cannot write the store .*list, show, trials, best, logs and serve can read it" <<<"$out"
  out=$("${T[@]}" ask waiting --db="$db" 2>&1); rc=$?
  check "${label}_ask_refused" test $rc -ne 0
  check "${label}_ask_says_why" grep -q "cannot write the store" <<<"$out"
}

if [ "$(id -u)" = 0 ] && mkdir -p ro && mount --bind store ro 2>/dev/null; then
  MOUNT="$WORK/ro"
  if mount -o remount,ro,bind ro 2>/dev/null; then
    read_only_checks rofs ro/t.db
    out=$("$TUNER" create waiting.json --db=ro/new.db 2>&1)
    check rofs_new_store_says_where grep -q "cannot create the store ro/new.db: it is on a read-only file system.*--db=PATH" <<<"$out"

    # serve: everything but cancel works, and cancel says why
    "$TUNER" serve --db=ro/t.db --listen=127.0.0.1:0 >serve.out 2>serve.err &
    SERVER=$!
    for _ in $(seq 1 50); do grep -q "http://" serve.out serve.err 2>/dev/null && break; sleep 0.1; done
    url=$(grep -ho "http://[^ ]*" serve.out serve.err | head -1)
    check rofs_serve_says_readonly grep -q "the store is read-only here: cancelling from the page is off" serve.err
    python3 - "$url" >serve.check 2>&1 <<'PY'
import json, sys, urllib.request, urllib.error
url = sys.argv[1]
base, token = url.split("/#token=")
def req(method, path):
    r = urllib.request.Request(base + path, method=method, data=b"" if method == "POST" else None,
                               headers={"Authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(r, timeout=10) as resp:
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
s, body = req("GET", "/api/studies")
print("list", s, sorted(x["name"] for x in body["studies"]) if s == 200 else body)
s, body = req("POST", "/api/studies/waiting/cancel")
print("cancel", s, body.get("error", ""), body.get("hint", ""))
PY
    check rofs_serve_lists grep -q "list 200 \['done', 'waiting'\]" serve.check
    check rofs_serve_cancel_409 grep -q "cancel 409 .*read-only" serve.check
    kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=""

    # a write-ahead log left by a killed tuner, without its -shm file: read as of the
    # last checkpoint, with a warning
    umount ro; MOUNT=""
    # (a name SQLite's URIs must escape: immutable mode opens it by URI)
    wal='w?a#l%20.db'
    cp store/t.db "$wal"
    python3 - "$wal" <<'PY'
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA wal_autocheckpoint = 0")
db.execute("UPDATE studies SET state = 'RUNNING' WHERE name = 'waiting'")
db.commit()
os._exit(0)  # no close: the -wal stays, not checkpointed
PY
    rm -f "$wal-shm"
    mkdir -p walro && cp "$wal" "$wal-wal" walro/ && mount --bind walro walro && MOUNT="$WORK/walro" &&
      mount -o remount,ro,bind walro
    out=$("$TUNER" list --db="walro/$wal" 2>&1); rc=$?
    check rofs_wal_without_shm_lists test $rc -eq 0
    check rofs_wal_without_shm_reads grep -q "^done .*SUCCEEDED" <<<"$out"
    check rofs_wal_without_shm_warns grep -q "warning: .*write-ahead log .* cannot be read without its -shm file" <<<"$out"
    umount walro; MOUNT=""
  else
    umount ro; MOUNT=""
    ok rofs_skipped_no_remount
  fi
fi

# No write access for this user: another user when root, else permission taken away.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null; then
  ROOT_TMP=$(mktemp -d /tmp/tuner_readonly.XXXXXX)
  chmod 755 "$ROOT_TMP"
  cp store/t.db "$ROOT_TMP/t.db" && chmod 644 "$ROOT_TMP/t.db"
  chmod -R a+rX "$WORK/runs"
  read_only_checks noperm "$ROOT_TMP/t.db" setpriv --reuid=nobody --regid=nogroup --clear-groups
  check noperm_store_unchanged test "$(sha256sum "$ROOT_TMP/t.db" | cut -d' ' -f1)" = "$sum_before"
  # through a symbolic link in a folder the user can write, to a store it could write
  # in a folder it cannot: SQLite's -wal and -shm go beside the store, not the link, so
  # that folder is the one that counts (the link's was checked: the reads failed)
  mkdir -p "$ROOT_TMP/real" "$ROOT_TMP/link"
  cp store/t.db "$ROOT_TMP/real/t.db" && chmod 666 "$ROOT_TMP/real/t.db"
  chmod 755 "$ROOT_TMP/real" && chmod 777 "$ROOT_TMP/link"
  ln -s "$ROOT_TMP/real/t.db" "$ROOT_TMP/link/t.db"
  out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$TUNER" list --db="$ROOT_TMP/link/t.db" 2>&1); rc=$?
  check noperm_symlink_list test $rc -eq 0
  check noperm_symlink_reads grep -q "^done .*SUCCEEDED" <<<"$out"
  out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups "$TUNER" cancel waiting --db="$ROOT_TMP/link/t.db" 2>&1)
  check noperm_symlink_cancel_says_folder grep -q "you cannot write its folder $ROOT_TMP/real" <<<"$out"
  check noperm_symlink_unchanged test "$(sha256sum "$ROOT_TMP/real/t.db" | cut -d' ' -f1)" = "$sum_before"
else
  cp store/t.db np.db
  mkdir -p np && mv np.db np/t.db && chmod a-w np/t.db np
  read_only_checks noperm np/t.db
  chmod u+w np np/t.db
  check noperm_store_unchanged test "$(sha256sum np/t.db | cut -d' ' -f1)" = "$sum_before"
fi
# A full disk (a small tmpfs, as root): the reads work (read-only, no room for SQLite's
# -shm file); a write says the disk is full and what to do; nothing stored is lost, and
# once there is room again the write goes through.
if [ "$(id -u)" = 0 ] && mkdir -p full && mount -t tmpfs -o size=1m tmpfs full 2>/dev/null; then
  MOUNT="$WORK/full"
  cp store/t.db full/t.db
  dd if=/dev/zero of=full/filler bs=4k 2>/dev/null
  out=$("$TUNER" list --db=full/t.db 2>&1)
  check full_disk_list grep -q "^done .*SUCCEEDED" <<<"$out"
  check full_disk_trials test "$("$TUNER" trials done --db=full/t.db --format=csv | grep -c SUCCEEDED)" -eq 2
  for c in "cancel waiting" "ask waiting"; do
    # shellcheck disable=SC2086
    out=$("$TUNER" $c --db=full/t.db 2>&1); rc=$?
    check "full_disk_${c%% *}_refused" test $rc -eq 1
    check "full_disk_${c%% *}_says" grep -q "cannot write the store full/t.db: the disk that holds it is full; hint: free space there" <<<"$out"
  done
  check full_disk_store_unchanged test "$(sha256sum full/t.db | cut -d' ' -f1)" = "$sum_before"
  rm full/filler
  out=$("$TUNER" cancel waiting --db=full/t.db 2>&1)
  check full_disk_room_again_cancel grep -q "state: *CANCELLED" <<<"$("$TUNER" show waiting --db=full/t.db)"
  # the disk fills while a study runs (its first trial fills it): the tuner stops
  # saying so and what to do; with room again, resume finishes the study
  cp store/t.db full/t2.db
  cat >fill.json <<JSON
{"jobId": "fill", "trainingInput": {"jobDir": "$WORK/runs/fill",
  "command": ["/bin/sh", "-c", "[ -e $WORK/filled ] || { touch $WORK/filled; dd if=/dev/zero of=$WORK/full/filler bs=4k 2>/dev/null; }; echo '{\\"score\\": \\"0.5\\"}' > \$CLOUD_ML_HP_METRIC_FILE"],
  "hyperparameters": {"goal": "MAXIMIZE", "hyperparameterMetricTag": "score", "maxTrials": 2,
    "maxParallelTrials": 1, "params": [{"parameterName": "x", "type": "DOUBLE", "minValue": 0, "maxValue": 1}]}}}
JSON
  out=$(timeout 120 "$TUNER" run fill.json --db=full/t2.db --quiet --dashboard=off 2>&1); rc=$?
  check full_disk_midrun_exit1 test $rc -eq 1
  check full_disk_midrun_says grep -q "database or disk is full; hint: free space on the disk that holds it" <<<"$out"
  rm -f full/filler
  out=$(timeout 120 "$TUNER" resume fill --db=full/t2.db --quiet --dashboard=off 2>&1); rc=$?
  check full_disk_midrun_resumes test $rc -eq 0
  check full_disk_midrun_all_trials test "$("$TUNER" trials fill --db=full/t2.db --format=csv | grep -c SUCCEEDED)" -eq 2
  umount full; MOUNT=""
else
  ok full_disk_skipped_not_root
fi

check_summary
