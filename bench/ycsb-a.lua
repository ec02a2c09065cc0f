-- sysbench script of bench/vs-peers.sh: YCSB workload A's operations in
-- YCSB's JDBC table shape, as faultbench's SQL driver runs them, for the
-- MariaDB comparison: each event is one statement, half reads of every
-- field of one record (SELECT ycsb_key, field0..field9 ... WHERE
-- ycsb_key = ?), half updates of one field of 100 bytes (UPDATE ... SET
-- field0 = ? WHERE ycsb_key = ?), keys drawn uniformly from user0 ..
-- user<records-1>, server-side prepared statements, autocommit.
-- The table (ycsbpeer) is filled by the script before the run.
sysbench.cmdline.options = {
  records = {"records in ycsbpeer", 100000},
}

function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  rd = con:prepare("SELECT ycsb_key, field0, field1, field2, field3, field4, field5, field6, field7, field8, field9 FROM ycsbpeer WHERE ycsb_key = ?")
  rkey = rd:bind_create(sysbench.sql.type.VARCHAR, 255)
  rd:bind_param(rkey)
  up = con:prepare("UPDATE ycsbpeer SET field0 = ? WHERE ycsb_key = ?")
  uval = up:bind_create(sysbench.sql.type.VARCHAR, 100)
  ukey = up:bind_create(sysbench.sql.type.VARCHAR, 255)
  up:bind_param(uval, ukey)
end

function event()
  local k = "user" .. sysbench.rand.uniform(0, sysbench.opt.records - 1)
  if sysbench.rand.uniform(0, 1) == 0 then
    rkey:set(k)
    local rs = rd:execute()
    if rs then rs:free() end
  else
    uval:set(sysbench.rand.string(string.rep("@", 100)))
    ukey:set(k)
    up:execute()
  end
end

function thread_done()
  rd:close()
  up:close()
  con:disconnect()
end
