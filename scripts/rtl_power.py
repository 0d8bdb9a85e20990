#!/usr/bin/python3
"""Gate-level energy of an RTL unit from its measured switching activity (scripts/rtl_power.sh).

Subcommands (docs/rtl-power.md says how they fit together):
  toggles VCD SCOPE CYCLES PERIOD_NS OUT   per-bit toggle counts and time high of every signal under
                                           the VCD scope SCOPE (e.g. TOP.tb.dut), over CYCLES clock
                                           periods from the first time stamp; one line per bit:
                                           `name toggles high_ps` (a small text file, committed for
                                           the test)
  activity NETLIST TOGGLES OUT_V OUT_TCL
                                           the OpenSTA inputs: the netlist with every flip-flop
                                           whose RTL name has a measured toggle rate fed from a
                                           new input port of that rate (OpenSTA 2.0.17 sets
                                           activities on input ports only and copies a register's
                                           D activity to its Q), and the Tcl that sets them
  energy REPORT CYCLES PERIOD_NS ACTIONS   the energy per action (pJ) and leakage (mW) from the
                                           output of `report_power -digits 6`
  tables RESULTS SECONDS LITERATURE OUT_180 OUT_7 OUT_DOC
                                           the technology files and docs/rtl-power.md from the
                                           results of scripts/rtl_power.sh
Energy per action = (internal + switching power) x (CYCLES x PERIOD) / ACTIONS: the formula, once.
"""
import re
import sys

FLIP_FLOPS = ("DFFPOSX1", "DFFNEGX1", "DFFSR")  # the OSU 0.18 um registers (dfflibmap picks these)
PORT_PREFIX = "rtlpower_q"


class Signal:
    """One VCD variable: its bit names (LSB first) and its current value as an integer."""

    def __init__(self, name, width, lsb):
        self.bits = [f"{name}[{lsb + i}]" for i in range(width)] if width > 1 or lsb is not None else [name]
        self.value = 0


def parse_var(fields, scope):
    """`$var wire 134 Y! b0_q [133:0] $end` -> (id, Signal); the name relative to the dut scope."""
    width, ident, name = int(fields[2]), fields[3], fields[4]
    lsb = None
    if len(fields) > 6 and fields[5].startswith("["):
        rng = fields[5].strip("[]").split(":")
        lsb = min(int(r) for r in rng)
    elif "[" in name and width == 1:  # `mem[3]`: one element of an unpacked array
        lsb = None
    full = ".".join(scope + [name])
    return ident, Signal(full, width, lsb)


def count_toggles(vcd_path, scope_path, cycles, period_ns):
    """{bit name: [toggles, ps high]} over CYCLES periods from the first time stamp of the VCD."""
    want = scope_path.split(".")
    scope, signals, stats = [], {}, {}
    with open(vcd_path) as vcd:
        for line in vcd:  # the header
            fields = line.split()
            if not fields:
                continue
            if fields[0] == "$scope":
                scope.append(fields[2])
            elif fields[0] == "$upscope":
                scope.pop()
            elif fields[0] == "$var" and scope[:len(want)] == want:
                ident, sig = parse_var(fields, scope[len(want):])
                signals.setdefault(ident, []).append(sig)
            elif fields[0] == "$enddefinitions":
                break
        if not signals:
            raise SystemExit(f"rtl_power: no signals under scope {scope_path} in {vcd_path}")
        for sigs in signals.values():
            for sig in sigs:
                for bit in sig.bits:
                    stats[bit] = [0, 0]
        t0, now, end = None, 0, None
        rose = {}  # bit name -> time it last went high
        for line in vcd:
            if line[0] == "#":
                now = int(line[1:])
                if t0 is None:
                    t0 = now
                    end = t0 + round(cycles * period_ns * 1000)
                if now > end:
                    break
                continue
            if line[0] in "bB":
                text, ident = line[1:].split()
            elif line[0] in "01xzXZ":
                text, ident = line[0], line[1:].strip()
            else:
                continue  # $dumpvars, $end, real values
            if ident not in signals:
                continue
            value = int(text.replace("x", "0").replace("z", "0").replace("X", "0").replace("Z", "0"), 2)
            for sig in signals[ident]:
                changed, sig.value = sig.value ^ value, value
                if now == t0:  # the initial values: not toggles
                    for i, bit in enumerate(sig.bits):
                        if value >> i & 1:
                            rose[bit] = now
                    continue
                while changed:
                    i = (changed & -changed).bit_length() - 1
                    changed &= changed - 1
                    bit = sig.bits[i]
                    stats[bit][0] += 1
                    if value >> i & 1:
                        rose[bit] = now
                    else:
                        stats[bit][1] += now - rose.pop(bit)
        for bit, since in rose.items():
            stats[bit][1] += end - since
    return stats


def write_toggles(stats, out_path, cycles, period_ns):
    with open(out_path, "w") as out:
        out.write(f"# bit toggles ps_high over {cycles} cycles of {period_ns} ns (scripts/rtl_power.py)\n")
        for bit in sorted(stats):
            out.write(f"{bit} {stats[bit][0]} {stats[bit][1]}\n")


def read_toggles(path):
    """{bit: (toggles, ps high)}, cycles, period_ns from a file of write_toggles."""
    stats = {}
    with open(path) as f:
        head = f.readline().split()
        cycles, period_ns = int(head[5]), float(head[8])
        for line in f:
            if line.startswith("#"):
                continue
            bit, toggles, high = line.split()
            stats[bit] = (int(toggles), int(high))
    return stats, cycles, period_ns


def activity(stats, bit, cycles, period_ns):
    """(transitions per clock period, fraction of time high) of a measured bit."""
    toggles, high = stats[bit]
    return toggles / cycles, high / (cycles * period_ns * 1000)


def netlist_name(text):
    r"""`\u_a_buf.b0_q [3]` or `b1_q[0]` -> `u_a_buf.b0_q[3]` (the VCD's bit names)."""
    text = text.strip()
    if text.startswith("\\"):
        text = text[1:]
    return text.replace(" [", "[").replace(" ", "")


CELL = re.compile(r"^\s*(\w+)\s+(\S+)\s*\((.*?)\);", re.S | re.M)
PIN = re.compile(r"\.(\w+)\((.*?)\)\s*(?:,|$)", re.S)


def feed_flip_flops(netlist, stats, cycles, period_ns):
    """The netlist with measured flip-flops fed from new ports, and the Tcl for those ports."""
    tcl, ports, matched, total = [], [], 0, 0

    def rewrite(m):
        nonlocal matched, total
        cell, inst, body = m.group(1), m.group(2), m.group(3)
        if cell not in FLIP_FLOPS:
            return m.group(0)
        total += 1
        pins = dict((p, v.strip()) for p, v in PIN.findall(body + ","))
        bit = netlist_name(pins.get("Q", ""))
        if bit not in stats:
            return m.group(0)
        matched += 1
        port = f"{PORT_PREFIX}{len(ports)}"
        ports.append(port)
        a, d = activity(stats, bit, cycles, period_ns)
        tcl.append(f"sta::set_power_input_port_activity [get_ports {port}] {a:.6g} {d:.6g} ;# {bit}")
        new_body = re.sub(r"\.D\((.*?)\)(\s*[,)\n])", lambda d_m: f".D({port}){d_m.group(2)}", body + "\n", count=1,
                          flags=re.S)
        return f"  {cell} {inst} ({new_body.rstrip()});"

    text = CELL.sub(rewrite, netlist)
    if ports:
        head = re.search(r"^module\s+\S+\s*\((.*?)\);", text, re.S | re.M)
        decl = "".join(f"  input {p};\n" for p in ports)
        text = (text[:head.end(1)] + ", " + ", ".join(ports) + text[head.end(1):head.end()] + "\n" + decl
                + text[head.end():])
    return text, tcl, matched, total


DECL = re.compile(r"^\s*(?:wire|input|output|inout)\s+\[(\d+):(\d+)\]\s+(\\\S+ |\S+?)\s*;", re.M)
TERM = re.compile(r"\s*(?:(\d+)'([bhd])([0-9a-fA-FxXzZ_]+)|(\\\S+ |[A-Za-z_][\w$]*)\s*(?:\[(\d+)(?::(\d+))?\])?)\s*$")


def term_bits(term, widths):
    """The bits of one concatenation term, MSB first: `x[7:4]`, `x[3]`, `\\esc [2]`, `x`, `8'h0f`."""
    m = TERM.match(term)
    if not m:
        raise SystemExit(f"rtl_power: cannot read the netlist term '{term.strip()}'")
    if m.group(1):
        width, base, digits = int(m.group(1)), {"b": 2, "h": 16, "d": 10}[m.group(2)], m.group(3)
        value = int(re.sub(r"[xXzZ]", "0", digits.replace("_", "")), base)
        return [f"1'b{value >> i & 1}" for i in reversed(range(width))]
    name, hi, lo = m.group(4), m.group(5), m.group(6)
    if hi is None and name not in widths:
        return [name]
    hi, lo = (int(hi), int(lo if lo is not None else hi)) if hi is not None else widths[name]
    step = -1 if hi >= lo else 1
    return [f"{name}[{i}]" for i in range(hi, lo + step, step)]


def split_assigns(netlist):
    """`assign {a, b[3:2]} = {c, 3'h1};` (Yosys' write_verilog) as one assign per bit: OpenSTA 2.0.17's
    reader takes no concatenation on the left."""
    widths = {m.group(3): (int(m.group(1)), int(m.group(2))) for m in DECL.finditer(netlist)}

    def bits(concat):
        return [b for term in concat.split(",") for b in term_bits(term, widths)]

    def rewrite(m):
        left = bits(m.group(1))
        right_text = m.group(2).strip()
        right = bits(right_text[1:-1] if right_text.startswith("{") else right_text)
        if len(left) != len(right):
            raise SystemExit(f"rtl_power: {len(left)} bits assigned from {len(right)} in the netlist")
        return "".join(f"  assign {a} = {b};\n" for a, b in zip(left, right))

    return re.sub(r"^\s*assign\s*\{(.*?)\}\s*=\s*(.*?);\n", rewrite, netlist, flags=re.M | re.S)


def input_port_tcl(netlist, stats, cycles, period_ns):
    """Activity of every measured input pin of the unit (the clock and reset are set apart)."""
    tcl, n = [], 0
    for m in re.finditer(r"^\s*input\s+(\[(\d+):(\d+)\]\s+)?(\S+?);", netlist, re.M):
        name = netlist_name(m.group(4))
        if name in ("clk_i", "rst_ni") or name.startswith(PORT_PREFIX):
            continue
        hi, lo = (int(m.group(2)), int(m.group(3))) if m.group(1) else (None, None)
        bits = [name] if hi is None else [f"{name}[{i}]" for i in range(min(hi, lo), max(hi, lo) + 1)]
        for bit in bits:
            if bit in stats:
                a, d = activity(stats, bit, cycles, period_ns)
                tcl.append(f"sta::set_power_input_port_activity [get_ports {{{bit}}}] {a:.6g} {d:.6g}")
                n += 1
    return tcl, n


def energy(report_text, cycles, period_ns, actions):
    """(pJ per action, dynamic mW, leakage mW) from `report_power -digits 6`."""
    m = re.search(r"^Total\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)", report_text, re.M)
    if not m:
        raise SystemExit("rtl_power: no Total line in the report_power output")
    internal, switching, leakage = (float(x) for x in m.groups()[:3])
    dynamic_w = internal + switching
    pj = dynamic_w * cycles * period_ns * 1e-9 / actions * 1e12
    return pj, dynamic_w * 1e3, leakage * 1e3


# ---- The technology tables (subcommand `tables`) ----------------------------------------------
# Stillmaker & Baas 2017 (Integration 58), as docs/energy.md cites them (coefficients checked
# against the nodeScale transcription of the paper's tables): energy factor of a node at supply V
# is a V^2 + b V + c; 180 nm: (0, 24.64, -17.98), OSU 0.18 um's nominal 1.8 V; HP7: (0.1776,
# -0.09097, 0.02447) at 0.7 V, the literature table's 7 nm end. Area 180 -> 7 nm: 1/320.
E180 = 0 * 1.8**2 + 24.64 * 1.8 - 17.98
E7 = 0.1776 * 0.7**2 - 0.09097 * 0.7 + 0.02447
ENERGY_FACTOR = E7 / E180
AREA_FACTOR = 1 / 320
LEAK_DENSITY_7NM = 20.0  # mW/mm2: the literature table's leakage rule at 7 nm (a project assumption)
PCU_LANES = 2048  # bf16 MACs per compute unit, as tech-7nm-literature's area_mm2.pcu
PMU_KIB = 512     # the memory unit's SRAM, as tech-7nm-literature's leakage_mw.pmu
ROUTER_WIDTH = 512 / 32  # the 32-bit router_broadcast widened to the 512-bit link of tech-7nm-literature
SCALING = (f"x{ENERGY_FACTOR:.5g} (Stillmaker & Baas 2017 energy 180 nm 1.8 V -> HP7 0.7 V: "
           f"{E7:.5g} / {E180:.5g})")
AREA_SCALING = "x1/320 (Stillmaker & Baas 2017 area 180 -> 7 nm)"
CELL_AREA = {"DFFPOSX1": 96.0, "DFFNEGX1": 96.0, "DFFSR": 176.0}  # um2, osu018_stdcells.lib


def fmt(v):
    return f"{v:.4g}"


def um2(v):
    return f"{v:.0f} um2"


UNIT = {"energy_pj": "pJ", "area_mm2": "mm2", "leakage_mw": "mW"}


def read_results(path):
    """{unit tag: {key: value}} from the results file of scripts/rtl_power.sh."""
    import shlex
    rows, failed = {}, {}
    with open(path) as f:
        for line in f:
            kv = dict(item.split("=", 1) for item in shlex.split(line))
            (failed if "failed" in kv else rows)[kv["unit"]] = kv
    return rows, failed


def read_literature(path):
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def storage_area_um2(netlist_path):
    """Area of the flip-flops of a memory unit's storage array (g_bank[*].mem_q / tag_q)."""
    with open(netlist_path) as f:
        text = f.read()
    total = 0.0
    for m in CELL.finditer(text):
        if m.group(1) in CELL_AREA and re.search(r"\.Q\(\\g_bank\[\d+\]\.(mem_q|tag_q)\[", m.group(3)):
            total += CELL_AREA[m.group(1)]
    return total


def leak_density(res):
    """pmu_buffer's leakage per area at OSU 0.18 um (mW/mm2)."""
    return float(res["pmu_buffer"]["leakage_mw"]) / (float(res["pmu_buffer"]["area_um2"]) * 1e-6)


class Entry:
    """One entry of both tables: the 180 nm value and source, the 7 nm value and source."""

    def __init__(self, v180, s180, v7, s7):
        self.v180, self.s180, self.v7, self.s7 = float(fmt(v180)), s180, float(fmt(v7)), s7


def measured(r):
    return (f"{r['dynamic_mw']} mW dynamic at 100 MHz over {r['cycles']} cycles / {r['actions']} actions "
            f"(OpenSTA 2.0.17 report_power, activities from Verilator: {r['measured']})")


def rtl_entries(res, lit, work):
    """The 21 entries: RTL-derived where a unit gives them, else from the literature table."""
    e = {}

    def energy(key, unit, per, what):
        r = res[unit]
        v = float(r["energy_pj_per_action"]) * per
        s = f"RTL {unit}: {what}; {measured(r)}"
        e[key] = Entry(v, s + "; OSU 0.18 um 1.8 V", v * ENERGY_FACTOR, f"{s}; {fmt(v)} pJ at 180 nm {SCALING}")

    def from_literature(section, key, scale, why):
        lv = lit[section][key]["value"]
        src = f"from tech-7nm-literature: {lit[section][key]['source']}"
        v180 = lv * scale
        s180 = f"not RTL-derived ({why}): {fmt(lv)} {UNIT[section]} at 7 nm " + (
            "unscaled (not a logic figure)" if scale == 1 else f"scaled back x{fmt(scale)} with the same factors") + \
            f"; {src}"
        e[(section, key)] = Entry(v180, s180, lv, src)

    energy(("energy_pj", "bf16_fma"), "pcu_ew", 1, "one lane-beat of pcu_ew (L=8) on random bf16 operands: "
           "the lane computes the fp32 product and the fp32 sum and rounds (an unfused multiply-add)")
    energy(("energy_pj", "fp32_add"), "fp32_add", 1, "one fp32 addition of an accumulation of bf16 products")
    if "fp32_exp" in res:
        energy(("energy_pj", "exp"), "fp32_exp", 1, "one fp32 exp of a softmax argument in [-16, 0)")
    else:
        from_literature("energy_pj", "exp", 1 / ENERGY_FACTOR, "fp32_exp did not synthesize in the time limit")
    for key in ("sram_read_byte", "sram_write_byte"):
        from_literature("energy_pj", key, 1 / ENERGY_FACTOR, "an SRAM macro; pmu_buffer stores in flip-flops")
    for key in ("fifo_push_byte", "fifo_pop_byte"):
        energy(("energy_pj", key), "stream_in_buf", 0.5,
               "half the energy per byte through a unit's 2-entry input FIFO (push and pop counted as equal)")
    energy(("energy_pj", "noc_byte_hop"), "router_broadcast", 1,
           "one byte forwarded by the N=4, 32-bit stream router (router logic only, no link wire)")
    for key in ("hbm_read_byte", "hbm_write_byte"):
        from_literature("energy_pj", key, 1, "off-chip DRAM")

    def area(key, area_um2, what):
        mm2 = area_um2 * 1e-6
        s = f"RTL {what}: Yosys 0.23 + abc on OSU 0.18 um, {um2(area_um2)}"
        e[key] = Entry(mm2, s, mm2 * AREA_FACTOR, f"{s}; {AREA_SCALING}")

    def leak(key, mw, area7, what):
        s = f"RTL {what}: OpenSTA report_power leakage at OSU 0.18 um"
        e[key] = Entry(mw, s, LEAK_DENSITY_7NM * area7,
                       f"{fmt(LEAK_DENSITY_7NM)} mW/mm2 (tech-7nm-literature's rule, a project assumption) x "
                       f"area at 7 nm {fmt(area7)} mm2 ({what}); the OSU leakage does not scale to a FinFET node")

    a8, a2 = float(res["pcu_ew"]["area_um2"]), float(res["pcu_ew.reduced"]["area_um2"])
    l2_lanes = int(res["pcu_ew.reduced"]["params"].split("=")[1])
    lane_um2 = (a8 - a2) / (8 - l2_lanes)
    pcu_um2 = a8 + (PCU_LANES - 8) * lane_um2
    fit = (f"pcu_ew at L=8 ({um2(a8)}) and L={l2_lanes} ({um2(a2)}), linear in the lanes: "
           f"{um2(lane_um2)} per lane, extrapolated to {PCU_LANES} lanes")
    area(("area_mm2", "pcu"), pcu_um2, fit)
    l8, l2 = float(res["pcu_ew"]["leakage_mw"]), float(res["pcu_ew.reduced"]["leakage_mw"])
    pcu_leak = l8 + (PCU_LANES - 8) * (l8 - l2) / (8 - l2_lanes)
    leak(("leakage_mw", "pcu"), pcu_leak, e[("area_mm2", "pcu")].v7, "pcu_ew fit as area_mm2.pcu")

    storage = storage_area_um2(f"{work}/pmu_buffer.v")
    pmu_um2 = float(res["pmu_buffer"]["area_um2"])
    area(("area_mm2", "pmu_logic"), pmu_um2 - storage,
         f"pmu_buffer (4 x 16 words) {um2(pmu_um2)} less its storage flip-flops {um2(storage)} "
         "(the read multiplexers stay in)")
    from_literature("area_mm2", "sram_per_kib", 1 / AREA_FACTOR, "an SRAM macro")
    router_um2 = float(res["router_broadcast"]["area_um2"])
    area(("area_mm2", "router"), router_um2 * ROUTER_WIDTH, f"router_broadcast (N=4, W=32) {um2(router_um2)} x"
         f" {fmt(ROUTER_WIDTH)} for a 512-bit link (onchip_bw 64 B/cycle; linear in the width, as tech-7nm-literature)")
    area(("area_mm2", "address_generator"), float(res["ag_offchip"]["area_um2"]), "ag_offchip (T=4, default)")
    from_literature("area_mm2", "hbm_phy_channel", 1 / AREA_FACTOR, "an HBM PHY")

    pmu_density = leak_density(res)
    pmu_area180 = e[("area_mm2", "pmu_logic")].v180 + PMU_KIB * e[("area_mm2", "sram_per_kib")].v180
    pmu_area7 = e[("area_mm2", "pmu_logic")].v7 + PMU_KIB * e[("area_mm2", "sram_per_kib")].v7
    e[("leakage_mw", "pmu")] = Entry(
        pmu_density * pmu_area180,
        f"pmu_buffer's leakage density at OSU 0.18 um {fmt(pmu_density)} mW/mm2 x (pmu_logic + {PMU_KIB} KiB x "
        f"sram_per_kib = {fmt(pmu_area180)} mm2); the SRAM part is not RTL-derived",
        LEAK_DENSITY_7NM * pmu_area7,
        f"{fmt(LEAK_DENSITY_7NM)} mW/mm2 (tech-7nm-literature's rule) x (pmu_logic + {PMU_KIB} KiB x sram_per_kib "
        f"= {fmt(pmu_area7)} mm2)")
    leak(("leakage_mw", "router"), float(res["router_broadcast"]["leakage_mw"]) * ROUTER_WIDTH,
         e[("area_mm2", "router")].v7, f"router_broadcast x {fmt(ROUTER_WIDTH)} as area_mm2.router")
    leak(("leakage_mw", "address_generator"), float(res["ag_offchip"]["leakage_mw"]),
         e[("area_mm2", "address_generator")].v7, "ag_offchip")
    from_literature("leakage_mw", "hbm_phy_channel", 1, "an HBM PHY; no leakage factor in the scaling equations")
    return e


ORDER = {
    "energy_pj": ("bf16_fma", "fp32_add", "exp", "sram_read_byte", "sram_write_byte", "fifo_push_byte",
                  "fifo_pop_byte", "noc_byte_hop", "hbm_read_byte", "hbm_write_byte"),
    "area_mm2": ("pcu", "pmu_logic", "sram_per_kib", "router", "address_generator", "hbm_phy_channel"),
    "leakage_mw": ("pcu", "pmu", "router", "address_generator", "hbm_phy_channel"),
}


def yaml_text(name, description, node, clock, entries, which, header):
    def quote(s):
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    lines = [f"# {h}" for h in header] + [f"name: {name}", f"description: {description}", f"node_nm: {node}"]
    if clock:
        lines.append(f"clock_ghz: {clock}")
    for section, keys in ORDER.items():
        lines.append(f"{section}:")
        for key in keys:
            en = entries[(section, key)]
            v, s = (en.v180, en.s180) if which == 180 else (en.v7, en.s7)
            lines += [f"  {key}:", f"    value: {fmt(v)}", f"    source: {quote(s)}"]
    return "\n".join(lines) + "\n"


WHY = {
    "bf16_fma": "our lane is an unfused fp32 multiplier and adder (both evaluate every beat) plus rounding, not a "
                "bf16 FMA, and the skid buffers and output register of 8 lanes are charged to it",
    "fp32_add": "a plain, unpipelined fp32 adder of the generic Yosys/abc flow",
    "exp": "a combinational exp (range reduction and polynomial) against a 4 mult + 4 add estimate",
    "fifo_push_byte": "a 2-entry skid buffer in flip-flops with its bypass multiplexer, against a bound from an "
                      "8 KB SRAM access",
    "fifo_pop_byte": "as fifo_push_byte",
    "noc_byte_hop": "router logic only (input buffer, output register) against a wire estimate of 0.3 mm "
                    "that does not scale with the node",
    "pcu": "both datapath-only for 2048 MACs: our fp32 multiplier and adder per lane against Horowitz's 45 nm "
           "fp16 multiplier and fp32 adder areas (unverified); the single 180 -> 7 nm area factor is coarse",
    "pmu_logic": "the address and descriptor logic and read multiplexers of a 64-word unit, against a project "
                 "estimate (unverified) for the banking and crossbar of a 512 KiB one",
    "router": "a 4-consumer stream router (input buffer, shared output register) widened linearly from 32 to "
              "512 bits, against a share of a mesh router tile (OpenPiton) widened the same way",
    "address_generator": "the view walker, request queue (MAXO = 64) and 512-bit request datapath in flip-flops",
}


def doc_text(res, failed, lit, entries, secs):
    L = []
    w = L.append
    w("# RTL-derived energy and area (generated)")
    w("")
    w(f"Generated by `scripts/rtl_power.sh` in {secs} s (Yosys 0.23, Verilator 5.006, OpenSTA 2.0.17, "
      "OSU 0.18 um cells of Debian's qflow). Do not edit; rerun the script. It writes "
      "`hw/presets/tech/tech-180nm-rtl.yaml` and `hw/presets/tech/tech-7nm-rtl.yaml` too.")
    w("")
    w("## How")
    w("")
    w("Command: `RTL_POWER_WORK=DIR nice -n 5 scripts/rtl_power.sh` (the wall time above, on the shared "
      "2-core machine; per unit below). `DIR` keeps the netlists, VCDs, toggle files and OpenSTA reports.")
    w("")
    w("Per unit: the mapped netlist of `rtl/synth.sh --area` (the flow of `scripts/rtl_area.sh`); a "
      "workload `testbench/rtl_power/workloads/<unit>.sv` run by Verilator with a VCD of every signal of "
      "the unit; toggles and time high per bit (`scripts/rtl_power.py toggles`); OpenSTA's `report_power` "
      "at a 10 ns clock with those activities; energy per action = (internal + switching power) x cycles x "
      "10 ns / actions (`scripts/rtl_power.py energy`, the one formula).")
    w("")
    w("What works in OpenSTA 2.0.17 (Debian): activities on input ports only. `set_power_activity -pins` "
      "fails (it calls a missing `get_pins_error`), and an activity set on an instance pin "
      "(`sta::set_power_pin_activity`) is ignored by the propagation. So the script feeds every flip-flop "
      "whose RTL name survived synthesis from a new input port carrying its Q's measured toggle rate and "
      "duty (OpenSTA copies a register's D activity to its Q), sets every measured input pin, holds reset "
      "high and the unmeasured configuration pins still, and lets OpenSTA propagate through the "
      "combinational cells (a probabilistic propagation: no glitch simulation, no wire parasitics, no clock "
      "tree; the flip-flops' clock pins are charged).")
    w("")
    w("## Measurements (OSU 0.18 um, 1.8 V, 100 MHz)")
    w("")
    w("| unit | parameters | area (um^2) | cycles | actions | dynamic (mW) | leakage (mW) | pJ/action | "
      "activities measured | synth / sim / sta (s) |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for tag, r in res.items():
        pj, dyn = (r["energy_pj_per_action"], r["dynamic_mw"]) if r["actions"] != "0" else ("-", "-")
        w(f"| `{tag}` | {r['params']} | {r['area_um2']} | {r['cycles']} | {r['actions']} | {dyn} | "
          f"{r['leakage_mw']} | {pj} | {r['measured']} | {r['synth_s']} / {r['sim_s']} / {r['sta_s']} |")
    for tag, r in failed.items():
        w(f"| `{tag}` | default | not mapped | | | | | | {r['failed']} | {r['synth_s']} / - / - |")
    w("")
    w("Actions: `pcu_ew` a lane-beat (8 per beat), `fp32_add` / `fp32_exp` an operation, `stream_in_buf` and "
      "`router_broadcast` a byte (4 per 32-bit beat), `pmu_buffer` a byte written or read (each element is "
      "written once and replayed once), `ag_offchip` a byte loaded. Without a workload (`pcu_ew.reduced`, "
      "the lane fit of the compute unit's area) only the area and leakage are used.")
    if "pmu_buffer" in res:
        pj = float(res["pmu_buffer"]["energy_pj_per_action"])
        w("")
        w(f"`pmu_buffer`: {fmt(pj)} pJ per byte at 180 nm, {fmt(pj * ENERGY_FACTOR)} pJ at 7 nm. Its storage is "
          "64 words of flip-flops (every word clocked each cycle, a 64:1 read multiplexer), not an SRAM macro, "
          "so this is not an SRAM's per-byte energy: the tables keep the literature's SRAM figures, and the "
          f"literature's 512 KiB SRAM read is {fmt(lit['energy_pj']['sram_read_byte']['value'])} pJ/B at 7 nm.")
    if "ag_offchip" in res:
        pj = float(res["ag_offchip"]["energy_pj_per_action"])
        w("")
        w(f"`ag_offchip`: {fmt(pj)} pJ per byte loaded at 180 nm, {fmt(pj * ENERGY_FACTOR)} pJ at 7 nm (4 requests "
          "of 8 bytes per [4 x 4] tile, the row-major case; a blocked layout moves 32 bytes per request). No "
          "technology entry takes it (the address generator's energy is not an action of the tables); HBM's "
          "per-byte energy is the literature's.")
    w("")
    w("## Scaling to 7 nm")
    w("")
    w(f"Stillmaker & Baas 2017, the factors of `docs/energy.md` ([SB]; the coefficients checked against the "
      f"nodeScale transcription of the paper's tables): energy factor E(V) = a V^2 + b V + c; 180 nm (0, 24.64, "
      f"-17.98) at 1.8 V: E180 = 24.64 x 1.8 - 17.98 = {E180:.5g}; HP7 at 0.7 V: E7 = {E7:.5g} (as for the "
      f"literature table); energy x {ENERGY_FACTOR:.5g} (1/{1 / ENERGY_FACTOR:.4g}); area x 1/320. "
      f"Leakage at 7 nm: {fmt(LEAK_DENSITY_7NM)} mW/mm2 x the 7 nm area, the literature table's rule "
      f"(OSU 0.18 um leakage, {fmt(leak_density(res))} mW/mm2 on pmu_buffer, says nothing about a FinFET node).")
    w("")
    w("## Side by side at 7 nm")
    w("")
    w("| entry | RTL, 180 nm | RTL, scaled to 7 nm | literature, 7 nm | RTL / literature | why they differ |")
    w("|---|---:|---:|---:|---:|---|")
    units = UNIT
    for section, keys in ORDER.items():
        for key in keys:
            en = entries[(section, key)]
            lv = lit[section][key]["value"]
            if en.s7.startswith("from tech-7nm-literature"):
                w(f"| `{section}.{key}` | - | - | {fmt(lv)} {units[section]} | - | not RTL-derived: taken from the "
                  "literature table |")
                continue
            ratio = f"{en.v7 / lv:.3g}x" if lv else "-"
            why = ("both are the literature's leakage rule (20 mW/mm2) on an area: the ratio is the area's"
                   if section == "leakage_mw" else WHY[key])
            w(f"| `{section}.{key}` | {fmt(en.v180)} {units[section]} | {fmt(en.v7)} {units[section]} | "
              f"{fmt(lv)} {units[section]} | {ratio} | {why} |")
    w("")
    w("General reasons for a ratio above 1: OSU 0.18 um is an academic library (few drive strengths, no "
      "complex cells beyond AOI/OAI/FA/HA), the units are written for clarity and cycle-exactness, not for "
      "area or energy (fp32 datapaths for bf16 operands, no operand gating: pcu_ew's adder and multiplier "
      "both switch every beat), the flow is a generic Yosys + abc mapping without timing-driven sizing, and "
      "the workloads are random data (about half the data bits toggle per beat), an upper range for real "
      "activations. One node-scaling factor from 180 nm to 7 nm (x1/551 energy, x1/320 area) also carries "
      "more error than the 45 -> 7 nm one of the literature table.")
    w("")
    w("## What falls short")
    w("")
    w("- The propagation through the combinational cells is OpenSTA's probabilistic one (signal "
      "probabilities and transition densities, inputs taken as independent), not a gate-level simulation: it "
      "sees no glitches, and in the deep fp32 datapaths its independence assumption can over- or "
      "under-count. Only the inputs and the flip-flops carry measured activity.")
    w("- No wires: the OSU library has no wire-load model and there is no placement, so the switching power "
      "charges only the pins' capacitance (low); no clock tree (the flip-flops' clock pins are charged).")
    w("- `fp32_exp` is not mapped within the time limit (as `fp32_silu` in docs/rtl-area.md): `energy_pj.exp` "
      "stays the literature's. The FIFO's push and pop are one measurement split in half. The compute unit's "
      "area and leakage are a linear extrapolation from 8 and 2 lanes to 2048; the router's from 32 to "
      "512 bits. The address generator's energy per byte has no entry in the tables (docs/energy.md).")
    w("- The workloads are short (1000 to 3000 cycles) random streams; real activations toggle fewer bits "
      "than uniform random mantissas.")
    w("")
    w("## Test")
    w("")
    w("`testbench/rtl_power/test_rtl_power.py` (CTest `rtl_power`, labels `rtl` and `quick`): the toggle "
      "counter on a hand-written VCD with a known answer, the flip-flop feeding of a hand-written netlist, the "
      "formula, the errors for bad input, and the router's energy per byte reproduced from "
      "its committed toggle counts (`testbench/rtl_power/router_broadcast.toggles`): synthesis, OpenSTA, "
      "the formula, equal to `energy_pj.noc_byte_hop` of `tech-180nm-rtl.yaml` to the digits written.")
    return "\n".join(L) + "\n"


def write_tables(results, secs, literature, out180, out7, out_doc):
    import os
    res, failed = read_results(results)
    lit = read_literature(literature)
    work = os.path.dirname(os.path.abspath(results))
    entries = rtl_entries(res, lit, work)
    header = ["Generated by scripts/rtl_power.sh (docs/rtl-power.md): do not edit, rerun the script.",
              "Energy from OpenSTA report_power with switching activity measured in Verilator, area from Yosys,",
              "at the OSU 0.18 um cells of qflow; entries no RTL unit gives come from tech-7nm-literature."]
    with open(out180, "w") as f:
        f.write(yaml_text("tech-180nm-rtl", "our RTL units at OSU 0.18 um (Yosys, Verilator activity, OpenSTA)",
                          180, 0.1, entries, 180, header))
    with open(out7, "w") as f:
        f.write(yaml_text("tech-7nm-rtl", "tech-180nm-rtl scaled to 7 nm (Stillmaker and Baas 2017)", 7, None,
                          entries, 7, header + [f"Scaled 180 -> 7 nm: energy {SCALING}, area {AREA_SCALING}."]))
    with open(out_doc, "w") as f:
        f.write(doc_text(res, failed, lit, entries, secs))
    print(f"tables: wrote {out180}, {out7}, {out_doc}")


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "toggles" and len(args) == 5:
        vcd, scope, cycles, period, out = args
        stats = count_toggles(vcd, scope, int(cycles), float(period))
        write_toggles(stats, out, int(cycles), float(period))
        print(f"toggles: {len(stats)} bits, {sum(s[0] for s in stats.values())} toggles -> {out}")
    elif cmd == "activity" and len(args) == 4:
        netlist_path, toggles, out_v, out_tcl = args
        stats, cycles, period_ns = read_toggles(toggles)
        with open(netlist_path) as f:
            netlist = f.read()
        text, ff_tcl, matched, total = feed_flip_flops(split_assigns(netlist), stats, cycles, period_ns)
        in_tcl, n_in = input_port_tcl(text, stats, cycles, period_ns)
        with open(out_v, "w") as f:
            f.write(text)
        with open(out_tcl, "w") as f:
            f.write(f"# measured activities: {n_in} input pins, {matched} of {total} flip-flops\n")
            f.write("\n".join(in_tcl + ff_tcl) + "\n")
        print(f"activity: {n_in} input pins, {matched} of {total} flip-flops measured")
    elif cmd == "energy" and len(args) == 4:
        with open(args[0]) as f:
            pj, dyn_mw, leak_mw = energy(f.read(), int(args[1]), float(args[2]), float(args[3]))
        print(f"energy_pj_per_action={pj:.6g} dynamic_mw={dyn_mw:.6g} leakage_mw={leak_mw:.6g}")
    elif cmd == "tables" and len(args) == 6:
        write_tables(*args)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
