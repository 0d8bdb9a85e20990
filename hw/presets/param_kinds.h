// The kinds of a hardware parameter, for the one-row declarations of hw/presets/hardware_params.def
// (HardwareParams) and hw/presets/hbm_params.def (HbmParams). A row is one of the macros below:
//
//   STEPSIM_UINT(type, member, key, default, unit, min, max, doc, origin)  a whole number in min..max
//   STEPSIM_REAL(member, key, default, unit, doc, origin)                 a number in (0, 1e6]
//   STEPSIM_BOOL(member, key, default, doc, origin)                       true or false (1 or 0)
//   STEPSIM_TEXT(member, key, default, doc, origin)                       any text
//   STEPSIM_WORD(member, key, default, check, doc, origin)                text that check(text) accepts
//   STEPSIM_ENUM(type, member, key, default, parse, name, doc, origin)    an enum read by parse, written by name
//
// `key` is the dotted name of presets and `--set`, `doc` its meaning, `origin` where its value
// comes from (both printed in docs/presets.md). Every kind expands to
//
//   STEPSIM_PARAM(type, member, key, default, unit, codec, doc, origin)
//
// which the file including a .def defines, and #undefs after: hardware.h and hbm_params.h as the
// struct member `type member = default;`, hardware.cpp as a row of the field table (parse with
// the range check and its error text, print, documentation). `codec` is how text becomes a value
// and back (hardware.cpp defines the codecs); it stays in parentheses so that its commas are one
// macro argument.
#pragma once

#define STEPSIM_UINT(type, member, key, def, unit, min, max, doc, origin) \
  STEPSIM_PARAM(type, member, key, def, unit, (UIntCodec<type, min, max>()), doc, origin)
#define STEPSIM_REAL(member, key, def, unit, doc, origin) \
  STEPSIM_PARAM(double, member, key, def, unit, (RealCodec()), doc, origin)
#define STEPSIM_BOOL(member, key, def, doc, origin) \
  STEPSIM_PARAM(bool, member, key, def, "bool", (BoolCodec()), doc, origin)
#define STEPSIM_TEXT(member, key, def, doc, origin) \
  STEPSIM_PARAM(std::string, member, key, def, "-", (TextCodec()), doc, origin)
#define STEPSIM_WORD(member, key, def, check, doc, origin) \
  STEPSIM_PARAM(std::string, member, key, def, "-", (WordCodec(check)), doc, origin)
#define STEPSIM_ENUM(type, member, key, def, parse, name, doc, origin) \
  STEPSIM_PARAM(type, member, key, def, "-", (EnumCodec<type>(parse, name)), doc, origin)
