// Hot loops compiled once per instruction set (GCC's function multiversioning): the function is
// built for x86-64-v4 (AVX-512 F/BW/CD/DQ/VL, with the generic tuning's 512-bit vectors; the
// Skylake-server tuning would use 256-bit ones, and the matmul ran 25 % slower with it; DQ gives
// the 64-bit multiplies and conversions the random generator needs), AVX2 and the x86-64
// baseline, and the CPU's own version is picked when the program loads. No dependency, one
// source, and the same IEEE arithmetic in every version (-ffp-contract=off holds in each: no
// fused multiply-adds), so a loop whose operations keep their order gives the same bits on every
// CPU. Functions a clone calls must be inlined into it (STEPSIM_INLINE where the compiler would
// not), or they run the baseline's code. Clang and AddressSanitizer builds keep the single
// baseline version.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define STEPSIM_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define STEPSIM_SIMD_CLONES
#endif

#define STEPSIM_INLINE inline __attribute__((always_inline))
