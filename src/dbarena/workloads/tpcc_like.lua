-- dbarena's TPC-C-like workload for sysbench (1.0+), PostgreSQL (pgsql driver) and
-- MySQL/MariaDB (mysql driver).
--
-- Written from the public TPC-C specification (revision 5.11): the nine tables with
-- their keys (clause 1.3), the initial population (4.3.3), the five transactions
-- (2.4 New-Order, 2.5 Payment, 2.6 Order-Status, 2.7 Delivery, 2.8 Stock-Level) with
-- the standard mix (45/43/4/4/4), NURand key choices (2.1.6) and the 1 % of
-- New-Orders that roll back on an unused item. No keying or think time (throughput
-- mode), no terminals emulation, no pricing, not audited: TPC-C-like, not TPC-C.
--
-- Preparation runs in steps so that loading can be parallel:
--   --tpcc_step=schema  (1 thread)  tables, and the 100,000 items
--   --tpcc_step=load    (N threads) warehouse w is loaded by thread (w - 1) % N
--   --tpcc_step=index   (1 thread)  secondary indexes, after the load
-- Each thread prints one "dbarena-tpcc" line at the end with its per-transaction
-- counts and latencies, which dbarena sums.

local ffi = require("ffi")

sysbench.cmdline.options = {
  warehouses = {"Number of warehouses (the scale)", 1},
  tpcc_step = {"Preparation step: schema, load or index", "schema"},
}

-- Engine-specific SQL, one table per engine.
local DIALECTS = {
  pgsql = {
    table_suffix = "",
    timestamp = "TIMESTAMP",
    concat = function(a, b) return a .. " || " .. b end,
  },
  mysql = {
    table_suffix = " ENGINE=InnoDB",
    timestamp = "DATETIME",
    concat = function(a, b) return "CONCAT(" .. a .. ", " .. b .. ")" end,
  },
}

local NO_TABLES = {"order_line", "new_order", "orders", "history", "customer", "district", "stock", "item",
                   "warehouse"}

-- Constants of NURand (2.1.6): C for loading c_last, and C for running, 66 apart
-- (the specification asks for a difference in [65, 119], not 96 or 112).
local C_LAST_LOAD, C_LAST_RUN, C_ID, C_OL_I_ID = 157, 223, 259, 7911
local SYLLABLES = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"}

local ITEMS, DISTRICTS, CUSTOMERS, ORDERS = 100000, 10, 3000, 3000

local function rand(a, b) return sysbench.rand.uniform(a, b) end

local function nurand(a, x, y, c)
  return ((bit.bor(rand(0, a), rand(x, y)) + c) % (y - x + 1)) + x
end

local function last_name(n)
  return SYLLABLES[math.floor(n / 100) + 1] .. SYLLABLES[math.floor(n / 10) % 10 + 1] .. SYLLABLES[n % 10 + 1]
end

local function astring(min, max) return sysbench.rand.string(string.rep("@", rand(min, max))) end
local function nstring(min, max) return sysbench.rand.string(string.rep("#", rand(min, max))) end
local function zip() return nstring(4, 4) .. "11111" end

-- i_data and s_data: 10 % contain "ORIGINAL" somewhere (4.3.3.1).
local function data_field()
  local s = astring(26, 50)
  if rand(1, 10) == 1 then
    local at = rand(1, #s - 8)
    s = s:sub(1, at - 1) .. "ORIGINAL" .. s:sub(at + 8)
  end
  return s
end

ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } dbarena_timespec;
  int clock_gettime(int clk_id, dbarena_timespec *tp);
]]
local ts = ffi.new("dbarena_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local drv, con, sql

local function connect()
  drv = sysbench.sql.driver()
  con = drv:connect()
  sql = DIALECTS[drv:name()]
  if sql == nil then error("tpcc_like supports the pgsql and mysql drivers, not " .. drv:name()) end
end

local function q(text) return con:query(text) end

-- Multi-row INSERT in batches (loading speed).
local Batch = {}
Batch.__index = Batch
local function batch(head) return setmetatable({head = head, rows = {}}, Batch) end
function Batch:add(row)
  self.rows[#self.rows + 1] = row
  if #self.rows >= 500 then self:flush() end
end
function Batch:flush()
  if #self.rows > 0 then
    q(self.head .. " VALUES " .. table.concat(self.rows, ","))
    self.rows = {}
  end
end

local function create_schema()
  local t, s = sql.timestamp, sql.table_suffix
  local dists = {}
  for d = 1, 10 do dists[d] = string.format("s_dist_%02d CHAR(24)", d) end
  local ddl = {
    "CREATE TABLE warehouse (w_id INT NOT NULL, w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), "
      .. "w_city VARCHAR(20), w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2), "
      .. "PRIMARY KEY (w_id))" .. s,
    "CREATE TABLE district (d_id INT NOT NULL, d_w_id INT NOT NULL, d_name VARCHAR(10), d_street_1 VARCHAR(20), "
      .. "d_street_2 VARCHAR(20), d_city VARCHAR(20), d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,4), "
      .. "d_ytd DECIMAL(12,2), d_next_o_id INT, PRIMARY KEY (d_w_id, d_id))" .. s,
    "CREATE TABLE customer (c_id INT NOT NULL, c_d_id INT NOT NULL, c_w_id INT NOT NULL, c_first VARCHAR(16), "
      .. "c_middle CHAR(2), c_last VARCHAR(16), c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), "
      .. "c_state CHAR(2), c_zip CHAR(9), c_phone CHAR(16), c_since " .. t .. ", c_credit CHAR(2), "
      .. "c_credit_lim DECIMAL(12,2), c_discount DECIMAL(4,4), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2), "
      .. "c_payment_cnt INT, c_delivery_cnt INT, c_data VARCHAR(500), PRIMARY KEY (c_w_id, c_d_id, c_id))" .. s,
    "CREATE TABLE history (h_c_id INT, h_c_d_id INT, h_c_w_id INT, h_d_id INT, h_w_id INT, h_date " .. t .. ", "
      .. "h_amount DECIMAL(6,2), h_data VARCHAR(24))" .. s,
    "CREATE TABLE new_order (no_o_id INT NOT NULL, no_d_id INT NOT NULL, no_w_id INT NOT NULL, "
      .. "PRIMARY KEY (no_w_id, no_d_id, no_o_id))" .. s,
    "CREATE TABLE orders (o_id INT NOT NULL, o_d_id INT NOT NULL, o_w_id INT NOT NULL, o_c_id INT, o_entry_d " .. t
      .. ", o_carrier_id INT, o_ol_cnt INT, o_all_local INT, PRIMARY KEY (o_w_id, o_d_id, o_id))" .. s,
    "CREATE TABLE order_line (ol_o_id INT NOT NULL, ol_d_id INT NOT NULL, ol_w_id INT NOT NULL, ol_number INT NOT NULL, "
      .. "ol_i_id INT, ol_supply_w_id INT, ol_delivery_d " .. t .. ", ol_quantity INT, ol_amount DECIMAL(6,2), "
      .. "ol_dist_info CHAR(24), PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number))" .. s,
    "CREATE TABLE item (i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50), "
      .. "PRIMARY KEY (i_id))" .. s,
    "CREATE TABLE stock (s_i_id INT NOT NULL, s_w_id INT NOT NULL, s_quantity INT, " .. table.concat(dists, ", ")
      .. ", s_ytd INT, s_order_cnt INT, s_remote_cnt INT, s_data VARCHAR(50), PRIMARY KEY (s_w_id, s_i_id))" .. s,
  }
  for _, name in ipairs(NO_TABLES) do q("DROP TABLE IF EXISTS " .. name) end
  for _, stmt in ipairs(ddl) do q(stmt) end
  local items = batch("INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data)")
  for i = 1, ITEMS do
    items:add(string.format("(%d, %d, '%s', %.2f, '%s')", i, rand(1, 10000), astring(14, 24),
      rand(100, 10000) / 100, data_field()))
  end
  items:flush()
end

local function load_warehouse(w)
  q("BEGIN")
  q(string.format("INSERT INTO warehouse VALUES (%d, '%s', '%s', '%s', '%s', '%s', '%s', %.4f, 300000.00)", w,
    astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20), astring(2, 2), zip(), rand(0, 2000) / 10000))
  local stock = batch("INSERT INTO stock")
  for i = 1, ITEMS do
    local dists = {}
    for d = 1, 10 do dists[d] = "'" .. astring(24, 24) .. "'" end
    stock:add(string.format("(%d, %d, %d, %s, 0, 0, 0, '%s')", i, w, rand(10, 100), table.concat(dists, ","),
      data_field()))
  end
  stock:flush()
  for d = 1, DISTRICTS do
    q(string.format("INSERT INTO district VALUES (%d, %d, '%s', '%s', '%s', '%s', '%s', '%s', %.4f, 30000.00, %d)",
      d, w, astring(6, 10), astring(10, 20), astring(10, 20), astring(10, 20), astring(2, 2), zip(),
      rand(0, 2000) / 10000, ORDERS + 1))
    local customers = batch("INSERT INTO customer")
    local history = batch("INSERT INTO history")
    for c = 1, CUSTOMERS do
      local last = c <= 1000 and last_name(c - 1) or last_name(nurand(255, 0, 999, C_LAST_LOAD))
      customers:add(string.format("(%d, %d, %d, '%s', 'OE', '%s', '%s', '%s', '%s', '%s', '%s', '%s', "
        .. "CURRENT_TIMESTAMP, '%s', 50000.00, %.4f, -10.00, 10.00, 1, 0, '%s')", c, d, w, astring(8, 16), last,
        astring(10, 20), astring(10, 20), astring(10, 20), astring(2, 2), zip(), nstring(16, 16),
        rand(1, 10) == 1 and "BC" or "GC", rand(0, 5000) / 10000, astring(300, 500)))
      history:add(string.format("(%d, %d, %d, %d, %d, CURRENT_TIMESTAMP, 10.00, '%s')", c, d, w, d, w,
        astring(12, 24)))
    end
    customers:flush()
    history:flush()
    -- o_c_id is a random permutation of the customers (4.3.3.1).
    local perm = {}
    for c = 1, CUSTOMERS do perm[c] = c end
    for i = CUSTOMERS, 2, -1 do
      local j = rand(1, i)
      perm[i], perm[j] = perm[j], perm[i]
    end
    local orders = batch("INSERT INTO orders")
    local lines = batch("INSERT INTO order_line")
    local new_orders = batch("INSERT INTO new_order")
    for o = 1, ORDERS do
      local ol_cnt = rand(5, 15)
      local delivered = o < 2101
      orders:add(string.format("(%d, %d, %d, %d, CURRENT_TIMESTAMP, %s, %d, 1)", o, d, w, perm[o],
        delivered and tostring(rand(1, 10)) or "NULL", ol_cnt))
      for n = 1, ol_cnt do
        lines:add(string.format("(%d, %d, %d, %d, %d, %d, %s, 5, %.2f, '%s')", o, d, w, n, rand(1, ITEMS), w,
          delivered and "CURRENT_TIMESTAMP" or "NULL", delivered and 0 or rand(1, 999999) / 100, astring(24, 24)))
      end
      if not delivered then new_orders:add(string.format("(%d, %d, %d)", o, d, w)) end
    end
    orders:flush()
    lines:flush()
    new_orders:flush()
  end
  q("COMMIT")
end

local function cmd_prepare()
  connect()
  local step = sysbench.opt.tpcc_step
  if step == "schema" then
    if sysbench.tid == 0 then create_schema() end
  elseif step == "load" then
    for w = sysbench.tid + 1, sysbench.opt.warehouses, sysbench.opt.threads do load_warehouse(w) end
  elseif step == "index" then
    if sysbench.tid == 0 then
      q("CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first)")
      q("CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id)")
    end
  else
    error("unknown --tpcc_step " .. tostring(step))
  end
  con:disconnect()
end

local function cmd_cleanup()
  connect()
  for _, name in ipairs(NO_TABLES) do q("DROP TABLE IF EXISTS " .. name) end
  con:disconnect()
end

sysbench.cmdline.commands = {
  prepare = {cmd_prepare, sysbench.cmdline.PARALLEL_COMMAND},
  cleanup = {cmd_cleanup},
}

-- ------------------------------------------------------------------ the transactions

local W, home
local stats = {}
local KINDS = {"new_order", "payment", "order_status", "delivery", "stock_level"}

function thread_init()
  connect()
  W = sysbench.opt.warehouses
  home = sysbench.tid % W + 1 -- a terminal's home warehouse is fixed (2.4.1.1)
  for _, k in ipairs(KINDS) do stats[k] = {count = 0, sum = 0, max = 0} end
  stats.rollbacks = 0
end

function thread_done()
  local parts = {}
  for _, k in ipairs(KINDS) do
    parts[#parts + 1] = string.format("%s=%d:%.3f:%.3f", k, stats[k].count, stats[k].sum, stats[k].max)
  end
  io.write(string.format("dbarena-tpcc thread=%d rollbacks=%d %s\n", sysbench.tid, stats.rollbacks,
    table.concat(parts, " ")))
  con:disconnect()
end

-- A deadlock or serialization failure makes sysbench restart the event: roll back first.
function sysbench.hooks.before_restart_event(err)
  con:query("ROLLBACK")
end

local function customer_by_name(w, d, last)
  local rs = q(string.format("SELECT c_id FROM customer WHERE c_w_id = %d AND c_d_id = %d AND c_last = '%s' "
    .. "ORDER BY c_first", w, d, last))
  local ids = {}
  local row = rs:fetch_row()
  while row do
    ids[#ids + 1] = tonumber(row[1])
    row = rs:fetch_row()
  end
  return ids[math.ceil(#ids / 2)] -- the one at position n/2 rounded up (2.5.2.2)
end

local function pick_customer(w, d)
  if rand(1, 100) <= 60 then
    return customer_by_name(w, d, last_name(nurand(255, 0, 999, C_LAST_RUN)))
  end
  return nurand(1023, 1, CUSTOMERS, C_ID)
end

local function new_order()
  local w, d, c = home, rand(1, DISTRICTS), nurand(1023, 1, CUSTOMERS, C_ID)
  local ol_cnt, rollback = rand(5, 15), rand(1, 100) == 1
  local items = {}
  for n = 1, ol_cnt do
    local supply = w
    if W > 1 and rand(1, 100) == 1 then
      repeat supply = rand(1, W) until supply ~= w
    end
    items[n] = {id = nurand(8191, 1, ITEMS, C_OL_I_ID), supply = supply, qty = rand(1, 10)}
  end
  -- Stock rows in a fixed order: fewer deadlocks between concurrent New-Orders.
  table.sort(items, function(a, b) return a.supply < b.supply or (a.supply == b.supply and a.id < b.id) end)
  if rollback then items[#items].id = ITEMS + 1 end -- an unused item: the transaction rolls back (2.4.1.4)
  local all_local = 1
  for _, it in ipairs(items) do if it.supply ~= w then all_local = 0 end end

  q("BEGIN")
  con:query_row(string.format("SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = %d AND c_d_id = %d "
    .. "AND c_id = %d", w, d, c))
  con:query_row(string.format("SELECT w_tax FROM warehouse WHERE w_id = %d", w))
  local _, o_id = con:query_row(string.format("SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = %d AND "
    .. "d_id = %d FOR UPDATE", w, d))
  o_id = tonumber(o_id)
  q(string.format("UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = %d AND d_id = %d", w, d))
  q(string.format("INSERT INTO orders VALUES (%d, %d, %d, %d, CURRENT_TIMESTAMP, NULL, %d, %d)", o_id, d, w, c,
    ol_cnt, all_local))
  q(string.format("INSERT INTO new_order VALUES (%d, %d, %d)", o_id, d, w))
  for n, it in ipairs(items) do
    local price = con:query_row(string.format("SELECT i_price FROM item WHERE i_id = %d", it.id))
    if price == nil then
      q("ROLLBACK")
      return "rollback"
    end
    local s_qty = tonumber((con:query_row(string.format("SELECT s_quantity FROM stock WHERE s_i_id = %d AND "
      .. "s_w_id = %d FOR UPDATE", it.id, it.supply))))
    local new_qty = s_qty - it.qty
    if new_qty < 10 then new_qty = new_qty + 91 end
    q(string.format("UPDATE stock SET s_quantity = %d, s_ytd = s_ytd + %d, s_order_cnt = s_order_cnt + 1, "
      .. "s_remote_cnt = s_remote_cnt + %d WHERE s_i_id = %d AND s_w_id = %d", new_qty, it.qty,
      it.supply ~= w and 1 or 0, it.id, it.supply))
    q(string.format("INSERT INTO order_line VALUES (%d, %d, %d, %d, %d, %d, NULL, %d, %.2f, '%s')", o_id, d, w, n,
      it.id, it.supply, it.qty, it.qty * tonumber(price), astring(24, 24)))
  end
  q("COMMIT")
  return "commit"
end

local function payment()
  local w, d = home, rand(1, DISTRICTS)
  local c_w, c_d = w, d
  if W > 1 and rand(1, 100) > 85 then -- 15 % pay through a remote warehouse (2.5.1.2)
    repeat c_w = rand(1, W) until c_w ~= w
    c_d = rand(1, DISTRICTS)
  end
  local amount = rand(100, 500000) / 100
  q("BEGIN")
  q(string.format("UPDATE warehouse SET w_ytd = w_ytd + %.2f WHERE w_id = %d", amount, w))
  con:query_row(string.format("SELECT w_name FROM warehouse WHERE w_id = %d", w))
  q(string.format("UPDATE district SET d_ytd = d_ytd + %.2f WHERE d_w_id = %d AND d_id = %d", amount, w, d))
  con:query_row(string.format("SELECT d_name FROM district WHERE d_w_id = %d AND d_id = %d", w, d))
  local c = pick_customer(c_w, c_d)
  local credit = con:query_row(string.format("SELECT c_credit FROM customer WHERE c_w_id = %d AND c_d_id = %d AND "
    .. "c_id = %d FOR UPDATE", c_w, c_d, c))
  local extra = ""
  if credit == "BC" then
    extra = string.format(", c_data = SUBSTR(%s, 1, 500)",
      sql.concat(string.format("'%d %d %d %d %d %.2f '", c, c_d, c_w, d, w, amount), "c_data"))
  end
  q(string.format("UPDATE customer SET c_balance = c_balance - %.2f, c_ytd_payment = c_ytd_payment + %.2f, "
    .. "c_payment_cnt = c_payment_cnt + 1%s WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", amount, amount, extra,
    c_w, c_d, c))
  q(string.format("INSERT INTO history VALUES (%d, %d, %d, %d, %d, CURRENT_TIMESTAMP, %.2f, '%s')", c, c_d, c_w, d,
    w, amount, astring(12, 24)))
  q("COMMIT")
  return "commit"
end

local function order_status()
  local w, d = home, rand(1, DISTRICTS)
  q("BEGIN")
  local c = pick_customer(w, d)
  con:query_row(string.format("SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = %d AND "
    .. "c_d_id = %d AND c_id = %d", w, d, c))
  local o_id = con:query_row(string.format("SELECT o_id FROM orders WHERE o_w_id = %d AND o_d_id = %d AND "
    .. "o_c_id = %d ORDER BY o_id DESC LIMIT 1", w, d, c))
  if o_id ~= nil then
    local rs = q(string.format("SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM "
      .. "order_line WHERE ol_w_id = %d AND ol_d_id = %d AND ol_o_id = %d", w, d, tonumber(o_id)))
    while rs:fetch_row() do end
  end
  q("COMMIT")
  return "commit"
end

local function delivery()
  local w, carrier = home, rand(1, 10)
  q("BEGIN")
  for d = 1, DISTRICTS do
    local o_id = con:query_row(string.format("SELECT no_o_id FROM new_order WHERE no_w_id = %d AND no_d_id = %d "
      .. "ORDER BY no_o_id LIMIT 1 FOR UPDATE", w, d))
    if o_id ~= nil then -- a district without undelivered orders is skipped (2.7.4.2)
      o_id = tonumber(o_id)
      q(string.format("DELETE FROM new_order WHERE no_w_id = %d AND no_d_id = %d AND no_o_id = %d", w, d, o_id))
      local c = tonumber((con:query_row(string.format("SELECT o_c_id FROM orders WHERE o_w_id = %d AND o_d_id = %d "
        .. "AND o_id = %d", w, d, o_id))))
      q(string.format("UPDATE orders SET o_carrier_id = %d WHERE o_w_id = %d AND o_d_id = %d AND o_id = %d", carrier,
        w, d, o_id))
      q(string.format("UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = %d AND ol_d_id = %d "
        .. "AND ol_o_id = %d", w, d, o_id))
      local total = con:query_row(string.format("SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = %d AND "
        .. "ol_d_id = %d AND ol_o_id = %d", w, d, o_id))
      q(string.format("UPDATE customer SET c_balance = c_balance + %.2f, c_delivery_cnt = c_delivery_cnt + 1 "
        .. "WHERE c_w_id = %d AND c_d_id = %d AND c_id = %d", tonumber(total) or 0, w, d, c))
    end
  end
  q("COMMIT")
  return "commit"
end

local function stock_level()
  local w, d, threshold = home, rand(1, DISTRICTS), rand(10, 20)
  q("BEGIN")
  local next_o = tonumber((con:query_row(string.format("SELECT d_next_o_id FROM district WHERE d_w_id = %d AND "
    .. "d_id = %d", w, d))))
  con:query_row(string.format("SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = %d AND "
    .. "ol_d_id = %d AND ol_o_id >= %d AND ol_o_id < %d AND s_w_id = %d AND s_i_id = ol_i_id AND s_quantity < %d",
    w, d, next_o - 20, next_o, w, threshold))
  q("COMMIT")
  return "commit"
end

local RUN = {new_order = new_order, payment = payment, order_status = order_status, delivery = delivery,
             stock_level = stock_level}

function event()
  local r, kind = rand(1, 100), nil
  if r <= 45 then kind = "new_order"
  elseif r <= 88 then kind = "payment"
  elseif r <= 92 then kind = "order_status"
  elseif r <= 96 then kind = "delivery"
  else kind = "stock_level" end
  local started = now_ms()
  local outcome = RUN[kind]()
  local elapsed = now_ms() - started
  local s = stats[kind]
  s.count, s.sum = s.count + 1, s.sum + elapsed
  if elapsed > s.max then s.max = elapsed end
  if outcome == "rollback" then stats.rollbacks = stats.rollbacks + 1 end
end
