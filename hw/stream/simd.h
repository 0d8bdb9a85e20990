// Hot loops compiled once per instruction set (GCC's function multiversioning): the function is
// built for AVX-512 (F: with the compiler's 512-bit vectors; the Skylake-server tuning would use
// 256-bit ones, and the matmul ran 25 % slower with it), AVX2 and the x86-64 baseline, and the
// CPU's own version is picked when the program loads. No dependency, one source, and the same
// IEEE arithmetic in every version (-ffp-contract=off holds in each: no fused multiply-adds), so
// a loop whose operations keep their order gives the same bits on every CPU. Clang and
// AddressSanitizer builds keep the single baseline version.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
#define STEPSIM_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define STEPSIM_SIMD_CLONES
#endif
