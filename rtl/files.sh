# Sourced by rtl/lint.sh and rtl/synth.sh: the RTL file list of a module (rtl/units.list).
# rtl_tops            the modules of units.list, one per line (not its configuration lines, `of:`,
#                     nor its bridge lines, `bridge:`: they name no module of their own)
# rtl_files TOP       the files of TOP: the common port logic, its listed extra modules, itself
# rtl_quick TOP       its `quick:P=V` parameter overrides, one per line
# rtl_noquick TOP     true if TOP is marked `noquick` (not synthesized by rtl/synth.sh --quick)
# rtl_flag TOP F      true if TOP's line has the word F (e.g. noshare)
rtl_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rtl_common=("$rtl_dir/stream_in_buf.sv" "$rtl_dir/stream_in_bufs.sv" "$rtl_dir/stream_out_reg.sv")
rtl_tops() {
  grep -v '^\s*\(#\|$\)' "$rtl_dir/units.list" |
    awk '$1 !~ /:/ {for (i = 2; i <= NF; i++) if ($i ~ /^of:/) next; print $1}'
}
rtl_files() {
  local f files=("${rtl_common[@]}")
  for dep in $(awk -v t="$1" '$1 == t {for (i = 2; i <= NF; i++) if ($i != "lib" && $i != "noquick" && $i != "noshare" && $i != "t16" && $i != "direct" && $i !~ /:/) print $i}' "$rtl_dir/units.list"); do
    files+=("$rtl_dir/$dep.sv")
  done
  case " ${rtl_common[*]} " in *" $rtl_dir/$1.sv "*) ;; *) files+=("$rtl_dir/$1.sv") ;; esac
  for f in "${files[@]}"; do echo "$f"; done
}
rtl_quick() { awk -v t="$1" '$1 == t {for (i = 2; i <= NF; i++) if ($i ~ /^quick:/) print substr($i, 7)}' "$rtl_dir/units.list"; }
rtl_flag() { awk -v t="$1" -v f="$2" '$1 == t {for (i = 2; i <= NF; i++) if ($i == f) h = 1} END {exit !h}' "$rtl_dir/units.list"; }
rtl_noquick() { awk -v t="$1" '$1 == t {for (i = 2; i <= NF; i++) if ($i == "noquick") f = 1} END {exit !f}' "$rtl_dir/units.list"; }
rtl_area_params() { awk -v t="$1" '$1 == t {for (i = 2; i <= NF; i++) if ($i ~ /^area:/) print substr($i, 6)}' "$rtl_dir/units.list"; }
