// sin, cos and tan of float64 for generated kernels (NOTE [Double trig]).
#include "codegen/ops_c.h"

namespace loom {

// NOTE [Double trig]: libm's sin, cos and tan are scalar calls, and a float64 kernel over
// them ran at 0.44-0.5 of eager's speed. Here they are branch-free: |x| = n pi/2 + r with
// r as a pair, then sin and cos of r by polynomials (Chebyshev fits of their series'
// remainders) with r's low part carried, tan as their quotient corrected by its exact
// remainder. Below 2^29, r comes from pi/2 in three parts (n times the first exactly, the
// second as an exact pair); above, from the bits of 2/pi that matter at x's exponent
// (Payne-Hanek): |x| = m 2^e with m a 53-bit integer, (2^e 2/pi) mod 4 as four 52-bit
// windows of 2/pi (a table of every window, loom_2opi), m times each as exact pairs, summed
// modulo 4 exactly (TwoSum) until the nearest integer is taken off. The large-argument path
// tripled the cost of every lane (1M doubles, one thread: 1.7 -> 4.8 ms), so kernels that
// defer their checks (NOTE [Deferred checks], render_c.cpp) leave it out of their first
// run: an argument above 2^29 is recorded like a failed check and the kernel runs again
// with it (float32's sin, cos and tan do the same with theirs, codegen/trig_c.cpp).
// Largest errors against long double over 8e6 inputs of every magnitude: sin 0.73
// ulp, cos 0.74, tan 0.85. Without hardware fma, libm's functions are called.
const char* c_double_trig_prelude() {
  return R"(#ifdef __FMA__
/* loom_2opi[i]: the 52 bits of 2/pi from bit i - 24 after the point (bits before it
   zero), as an integer. */
static const double loom_2opi[1151] = {
  0x1.45f306c000000p+26, 0x1.45f306c000000p+27, 0x1.45f306d000000p+28, 0x1.45f306d800000p+29,
  0x1.45f306dc00000p+30, 0x1.45f306dc00000p+31, 0x1.45f306dc00000p+32, 0x1.45f306dc80000p+33,
  0x1.45f306dc80000p+34, 0x1.45f306dc80000p+35, 0x1.45f306dc90000p+36, 0x1.45f306dc98000p+37,
  0x1.45f306dc9c000p+38, 0x1.45f306dc9c000p+39, 0x1.45f306dc9c000p+40, 0x1.45f306dc9c800p+41,
  0x1.45f306dc9c800p+42, 0x1.45f306dc9c800p+43, 0x1.45f306dc9c800p+44, 0x1.45f306dc9c880p+45,
  0x1.45f306dc9c880p+46, 0x1.45f306dc9c880p+47, 0x1.45f306dc9c880p+48, 0x1.45f306dc9c880p+49,
  0x1.45f306dc9c880p+50, 0x1.45f306dc9c882p+51, 0x1.17cc1b7272208p+50, 0x1.17cc1b727220ap+51,
  0x1.7cc1b727220a0p+48, 0x1.7cc1b727220a8p+49, 0x1.7cc1b727220a8p+50, 0x1.7cc1b727220a8p+51,
  0x1.f306dc9c882a4p+50, 0x1.f306dc9c882a4p+51, 0x1.e60db9391054ap+51, 0x1.cc1b727220a94p+51,
  0x1.9836e4e441528p+51, 0x1.306dc9c882a52p+51, 0x1.836e4e4415298p+49, 0x1.836e4e441529cp+50,
  0x1.836e4e441529ep+51, 0x1.06dc9c882a53ep+51, 0x1.b727220a94fc0p+46, 0x1.b727220a94fe0p+47,
  0x1.b727220a94fe0p+48, 0x1.b727220a94fe0p+49, 0x1.b727220a94fe0p+50, 0x1.b727220a94fe0p+51,
  0x1.6e4e441529fc2p+51, 0x1.b9391054a7f08p+50, 0x1.b9391054a7f08p+51, 0x1.727220a94fe12p+51,
  0x1.c9c882a53f84cp+50, 0x1.c9c882a53f84ep+51, 0x1.9391054a7f09cp+51, 0x1.27220a94fe13ap+51,
  0x1.391054a7f09d0p+49, 0x1.391054a7f09d4p+50, 0x1.391054a7f09d4p+51, 0x1.c882a53f84ea8p+49,
  0x1.c882a53f84eacp+50, 0x1.c882a53f84eaep+51, 0x1.91054a7f09d5ep+51, 0x1.220a94fe13abep+51,
  0x1.1054a7f09d5f0p+49, 0x1.1054a7f09d5f4p+50, 0x1.1054a7f09d5f4p+51, 0x1.054a7f09d5f40p+48,
  0x1.054a7f09d5f40p+49, 0x1.054a7f09d5f44p+50, 0x1.054a7f09d5f46p+51, 0x1.529fc2757d1c0p+46,
  0x1.529fc2757d1e0p+47, 0x1.529fc2757d1f0p+48, 0x1.529fc2757d1f0p+49, 0x1.529fc2757d1f4p+50,
  0x1.529fc2757d1f4p+51, 0x1.4a7f09d5f47d4p+50, 0x1.4a7f09d5f47d4p+51, 0x1.29fc2757d1f50p+50,
  0x1.29fc2757d1f52p+51, 0x1.4fe13abe8fa98p+49, 0x1.4fe13abe8fa98p+50, 0x1.4fe13abe8fa9ap+51,
  0x1.3f84eafa3ea68p+50, 0x1.3f84eafa3ea68p+51, 0x1.fc2757d1f5348p+49, 0x1.fc2757d1f534cp+50,
  0x1.fc2757d1f534cp+51, 0x1.f84eafa3ea69ap+51, 0x1.f09d5f47d4d36p+51, 0x1.e13abe8fa9a6ep+51,
  0x1.c2757d1f534dcp+51, 0x1.84eafa3ea69bap+51, 0x1.09d5f47d4d376p+51, 0x1.3abe8fa9a6ee0p+47,
  0x1.3abe8fa9a6ee0p+48, 0x1.3abe8fa9a6ee0p+49, 0x1.3abe8fa9a6ee0p+50, 0x1.3abe8fa9a6ee0p+51,
  0x1.d5f47d4d37700p+49, 0x1.d5f47d4d37700p+50, 0x1.d5f47d4d37702p+51, 0x1.abe8fa9a6ee06p+51,
  0x1.57d1f534ddc0cp+51, 0x1.5f47d4d377034p+50, 0x1.5f47d4d377036p+51, 0x1.7d1f534ddc0d8p+50,
  0x1.7d1f534ddc0dap+51, 0x1.f47d4d377036cp+50, 0x1.f47d4d377036cp+51, 0x1.e8fa9a6ee06dap+51,
  0x1.d1f534ddc0db6p+51, 0x1.a3ea69bb81b6cp+51, 0x1.47d4d377036d8p+51, 0x1.1f534ddc0db60p+50,
  0x1.1f534ddc0db62p+51, 0x1.f534ddc0db620p+48, 0x1.f534ddc0db628p+49, 0x1.f534ddc0db628p+50,
  0x1.f534ddc0db628p+51, 0x1.ea69bb81b6c52p+51, 0x1.d4d377036d8a4p+51, 0x1.a9a6ee06db14ap+51,
  0x1.534ddc0db6294p+51, 0x1.4d377036d8a54p+50, 0x1.4d377036d8a56p+51, 0x1.34ddc0db62958p+50,
  0x1.34ddc0db62958p+51, 0x1.a6ee06db14ac8p+49, 0x1.a6ee06db14accp+50, 0x1.a6ee06db14accp+51,
  0x1.4ddc0db629598p+51, 0x1.377036d8a5664p+50, 0x1.377036d8a5664p+51, 0x1.bb81b6c52b320p+49,
  0x1.bb81b6c52b324p+50, 0x1.bb81b6c52b326p+51, 0x1.77036d8a5664ep+51, 0x1.dc0db6295993cp+50,
  0x1.dc0db6295993cp+51, 0x1.b81b6c52b3278p+51, 0x1.7036d8a5664f0p+51, 0x1.c0db6295993c4p+50,
  0x1.c0db6295993c4p+51, 0x1.81b6c52b32788p+51, 0x1.036d8a5664f10p+51, 0x1.b6c52b3278800p+45,
  0x1.b6c52b3278840p+46, 0x1.b6c52b3278860p+47, 0x1.b6c52b3278870p+48, 0x1.b6c52b3278870p+49,
  0x1.b6c52b3278870p+50, 0x1.b6c52b3278872p+51, 0x1.6d8a5664f10e4p+51, 0x1.b6295993c4390p+50,
  0x1.b6295993c4390p+51, 0x1.6c52b32788720p+51, 0x1.b14acc9e21c80p+50, 0x1.b14acc9e21c82p+51,
  0x1.6295993c43904p+51, 0x1.8a5664f10e410p+50, 0x1.8a5664f10e410p+51, 0x1.14acc9e21c820p+51,
  0x1.4acc9e21c8200p+48, 0x1.4acc9e21c8208p+49, 0x1.4acc9e21c820cp+50, 0x1.4acc9e21c820ep+51,
  0x1.2b3278872083cp+50, 0x1.2b3278872083ep+51, 0x1.5993c439041f8p+49, 0x1.5993c439041fcp+50,
  0x1.5993c439041fep+51, 0x1.664f10e4107f8p+50, 0x1.664f10e4107f8p+51, 0x1.993c439041fe4p+50,
  0x1.993c439041fe4p+51, 0x1.3278872083fcap+51, 0x1.93c439041fe50p+49, 0x1.93c439041fe50p+50,
  0x1.93c439041fe50p+51, 0x1.278872083fca2p+51, 0x1.3c439041fe510p+49, 0x1.3c439041fe514p+50,
  0x1.3c439041fe516p+51, 0x1.e21c820ff28b0p+49, 0x1.e21c820ff28b0p+50, 0x1.e21c820ff28b0p+51,
  0x1.c439041fe5162p+51, 0x1.8872083fca2c6p+51, 0x1.10e4107f9458ep+51, 0x1.0e4107f9458e0p+48,
  0x1.0e4107f9458e8p+49, 0x1.0e4107f9458e8p+50, 0x1.0e4107f9458eap+51, 0x1.c820ff28b1d40p+47,
  0x1.c820ff28b1d50p+48, 0x1.c820ff28b1d58p+49, 0x1.c820ff28b1d5cp+50, 0x1.c820ff28b1d5ep+51,
  0x1.9041fe5163abcp+51, 0x1.2083fca2c757ap+51, 0x1.041fe5163abd8p+49, 0x1.041fe5163abdcp+50,
  0x1.041fe5163abdep+51, 0x1.07f9458eaf780p+46, 0x1.07f9458eaf7a0p+47, 0x1.07f9458eaf7a0p+48,
  0x1.07f9458eaf7a8p+49, 0x1.07f9458eaf7acp+50, 0x1.07f9458eaf7aep+51, 0x1.fe5163abdeb80p+46,
  0x1.fe5163abdeba0p+47, 0x1.fe5163abdebb0p+48, 0x1.fe5163abdebb8p+49, 0x1.fe5163abdebbcp+50,
  0x1.fe5163abdebbcp+51, 0x1.fca2c757bd778p+51, 0x1.f9458eaf7aef0p+51, 0x1.f28b1d5ef5de2p+51,
  0x1.e5163abdebbc4p+51, 0x1.ca2c757bd778ap+51, 0x1.9458eaf7aef14p+51, 0x1.28b1d5ef5de2ap+51,
  0x1.458eaf7aef158p+49, 0x1.458eaf7aef158p+50, 0x1.458eaf7aef158p+51, 0x1.163abdebbc560p+50,
  0x1.163abdebbc560p+51, 0x1.63abdebbc5610p+48, 0x1.63abdebbc5618p+49, 0x1.63abdebbc5618p+50,
  0x1.63abdebbc561ap+51, 0x1.8eaf7aef1586cp+50, 0x1.8eaf7aef1586cp+51, 0x1.1d5ef5de2b0dap+51,
  0x1.d5ef5de2b0db0p+48, 0x1.d5ef5de2b0db8p+49, 0x1.d5ef5de2b0db8p+50, 0x1.d5ef5de2b0db8p+51,
  0x1.abdebbc561b72p+51, 0x1.57bd778ac36e4p+51, 0x1.5ef5de2b0db90p+50, 0x1.5ef5de2b0db92p+51,
  0x1.7bd778ac36e48p+50, 0x1.7bd778ac36e48p+51, 0x1.ef5de2b0db920p+50, 0x1.ef5de2b0db922p+51,
  0x1.debbc561b7246p+51, 0x1.bd778ac36e48cp+51, 0x1.7aef1586dc91ap+51, 0x1.ebbc561b7246cp+50,
  0x1.ebbc561b7246ep+51, 0x1.d778ac36e48dcp+51, 0x1.aef1586dc91b8p+51, 0x1.5de2b0db92370p+51,
  0x1.778ac36e48dc4p+50, 0x1.778ac36e48dc6p+51, 0x1.de2b0db92371cp+50, 0x1.de2b0db92371cp+51,
  0x1.bc561b7246e3ap+51, 0x1.78ac36e48dc74p+51, 0x1.e2b0db92371d0p+50, 0x1.e2b0db92371d2p+51,
  0x1.c561b7246e3a4p+51, 0x1.8ac36e48dc748p+51, 0x1.1586dc91b8e90p+51, 0x1.586dc91b8e900p+48,
  0x1.586dc91b8e908p+49, 0x1.586dc91b8e908p+50, 0x1.586dc91b8e908p+51, 0x1.61b7246e3a424p+50,
  0x1.61b7246e3a424p+51, 0x1.86dc91b8e9090p+50, 0x1.86dc91b8e9092p+51, 0x1.0db92371d2126p+51,
  0x1.b7246e3a424c0p+47, 0x1.b7246e3a424d0p+48, 0x1.b7246e3a424d8p+49, 0x1.b7246e3a424dcp+50,
  0x1.b7246e3a424dcp+51, 0x1.6e48dc74849bap+51, 0x1.b92371d2126e8p+50, 0x1.b92371d2126e8p+51,
  0x1.7246e3a424dd2p+51, 0x1.c91b8e9093748p+50, 0x1.c91b8e909374ap+51, 0x1.92371d2126e96p+51,
  0x1.246e3a424dd2ep+51, 0x1.2371d2126e970p+49, 0x1.2371d2126e970p+50, 0x1.2371d2126e970p+51,
  0x1.1b8e909374b80p+49, 0x1.1b8e909374b80p+50, 0x1.1b8e909374b80p+51, 0x1.b8e909374b800p+48,
  0x1.b8e909374b800p+49, 0x1.b8e909374b800p+50, 0x1.b8e909374b800p+51, 0x1.71d2126e97002p+51,
  0x1.c74849ba5c00cp+50, 0x1.c74849ba5c00cp+51, 0x1.8e909374b8018p+51, 0x1.1d2126e970032p+51,
  0x1.d2126e9700320p+48, 0x1.d2126e9700320p+49, 0x1.d2126e9700324p+50, 0x1.d2126e9700324p+51,
  0x1.a424dd2e00648p+51, 0x1.4849ba5c00c92p+51, 0x1.2126e97003248p+50, 0x1.2126e97003248p+51,
  0x1.09374b8019248p+49, 0x1.09374b8019248p+50, 0x1.09374b801924ap+51, 0x1.26e9700324960p+47,
  0x1.26e9700324970p+48, 0x1.26e9700324970p+49, 0x1.26e9700324974p+50, 0x1.26e9700324976p+51,
  0x1.374b801924bb8p+49, 0x1.374b801924bb8p+50, 0x1.374b801924bbap+51, 0x1.ba5c00c925dd0p+49,
  0x1.ba5c00c925dd4p+50, 0x1.ba5c00c925dd4p+51, 0x1.74b801924bba8p+51, 0x1.d2e006492eea0p+50,
  0x1.d2e006492eea0p+51, 0x1.a5c00c925dd40p+51, 0x1.4b801924bba82p+51, 0x1.2e006492eea08p+50,
  0x1.2e006492eea08p+51, 0x1.7003249775048p+49, 0x1.700324977504cp+50, 0x1.700324977504ep+51,
  0x1.c00c925dd4138p+50, 0x1.c00c925dd413ap+51, 0x1.801924bba8274p+51, 0x1.00324977504e8p+51,
  0x1.924bba8274000p+41, 0x1.924bba8274400p+42, 0x1.924bba8274600p+43, 0x1.924bba8274600p+44,
  0x1.924bba8274600p+45, 0x1.924bba8274640p+46, 0x1.924bba8274640p+47, 0x1.924bba8274640p+48,
  0x1.924bba8274648p+49, 0x1.924bba8274648p+50, 0x1.924bba8274648p+51, 0x1.24977504e8c90p+51,
  0x1.24bba82746480p+49, 0x1.24bba82746484p+50, 0x1.24bba82746486p+51, 0x1.25dd413a32438p+49,
  0x1.25dd413a32438p+50, 0x1.25dd413a32438p+51, 0x1.2eea09d1921c8p+49, 0x1.2eea09d1921ccp+50,
  0x1.2eea09d1921cep+51, 0x1.77504e8c90e78p+49, 0x1.77504e8c90e7cp+50, 0x1.77504e8c90e7ep+51,
  0x1.dd413a32439fcp+50, 0x1.dd413a32439fcp+51, 0x1.ba827464873f8p+51, 0x1.7504e8c90e7f0p+51,
  0x1.d413a32439fc0p+50, 0x1.d413a32439fc2p+51, 0x1.a827464873f86p+51, 0x1.504e8c90e7f0ep+51,
  0x1.413a32439fc38p+50, 0x1.413a32439fc3ap+51, 0x1.04e8c90e7f0ecp+50, 0x1.04e8c90e7f0eep+51,
  0x1.3a32439fc3bc0p+46, 0x1.3a32439fc3bc0p+47, 0x1.3a32439fc3bd0p+48, 0x1.3a32439fc3bd0p+49,
  0x1.3a32439fc3bd4p+50, 0x1.3a32439fc3bd6p+51, 0x1.d1921cfe1deb0p+49, 0x1.d1921cfe1deb0p+50,
  0x1.d1921cfe1deb0p+51, 0x1.a32439fc3bd62p+51, 0x1.464873f877ac6p+51, 0x1.1921cfe1deb1cp+50,
  0x1.1921cfe1deb1cp+51, 0x1.921cfe1deb1c0p+48, 0x1.921cfe1deb1c8p+49, 0x1.921cfe1deb1c8p+50,
  0x1.921cfe1deb1cap+51, 0x1.2439fc3bd6396p+51, 0x1.21cfe1deb1cb0p+49, 0x1.21cfe1deb1cb0p+50,
  0x1.21cfe1deb1cb0p+51, 0x1.0e7f0ef58e588p+49, 0x1.0e7f0ef58e588p+50, 0x1.0e7f0ef58e588p+51,
  0x1.cfe1deb1cb120p+47, 0x1.cfe1deb1cb120p+48, 0x1.cfe1deb1cb128p+49, 0x1.cfe1deb1cb128p+50,
  0x1.cfe1deb1cb128p+51, 0x1.9fc3bd6396252p+51, 0x1.3f877ac72c4a6p+51, 0x1.fc3bd63962530p+49,
  0x1.fc3bd63962534p+50, 0x1.fc3bd63962534p+51, 0x1.f877ac72c4a68p+51, 0x1.f0ef58e5894d2p+51,
  0x1.e1deb1cb129a6p+51, 0x1.c3bd63962534ep+51, 0x1.877ac72c4a69cp+51, 0x1.0ef58e5894d38p+51,
  0x1.deb1cb129a720p+47, 0x1.deb1cb129a730p+48, 0x1.deb1cb129a738p+49, 0x1.deb1cb129a73cp+50,
  0x1.deb1cb129a73ep+51, 0x1.bd63962534e7cp+51, 0x1.7ac72c4a69cfap+51, 0x1.eb1cb129a73ecp+50,
  0x1.eb1cb129a73eep+51, 0x1.d63962534e7dcp+51, 0x1.ac72c4a69cfbap+51, 0x1.58e5894d39f74p+51,
  0x1.63962534e7dd0p+50, 0x1.63962534e7dd0p+51, 0x1.8e5894d39f744p+50, 0x1.8e5894d39f744p+51,
  0x1.1cb129a73ee88p+51, 0x1.cb129a73ee880p+48, 0x1.cb129a73ee880p+49, 0x1.cb129a73ee880p+50,
  0x1.cb129a73ee882p+51, 0x1.962534e7dd104p+51, 0x1.2c4a69cfba208p+51, 0x1.62534e7dd1040p+49,
  0x1.62534e7dd1044p+50, 0x1.62534e7dd1046p+51, 0x1.894d39f744118p+50, 0x1.894d39f74411ap+51,
  0x1.129a73ee88234p+51, 0x1.29a73ee882350p+48, 0x1.29a73ee882358p+49, 0x1.29a73ee88235cp+50,
  0x1.29a73ee88235ep+51, 0x1.4d39f74411af8p+49, 0x1.4d39f74411af8p+50, 0x1.4d39f74411afap+51,
  0x1.34e7dd1046be8p+50, 0x1.34e7dd1046beap+51, 0x1.a73ee88235f50p+49, 0x1.a73ee88235f50p+50,
  0x1.a73ee88235f52p+51, 0x1.4e7dd1046bea4p+51, 0x1.39f74411afa94p+50, 0x1.39f74411afa96p+51,
  0x1.cfba208d7d4b8p+49, 0x1.cfba208d7d4b8p+50, 0x1.cfba208d7d4bap+51, 0x1.9f74411afa974p+51,
  0x1.3ee88235f52eap+51, 0x1.f74411afa9758p+49, 0x1.f74411afa975cp+50, 0x1.f74411afa975cp+51,
  0x1.ee88235f52ebap+51, 0x1.dd1046bea5d76p+51, 0x1.ba208d7d4baecp+51, 0x1.74411afa975dap+51,
  0x1.d1046bea5d768p+50, 0x1.d1046bea5d768p+51, 0x1.a208d7d4baed0p+51, 0x1.4411afa975da2p+51,
  0x1.1046bea5d7688p+50, 0x1.1046bea5d7688p+51, 0x1.046bea5d76890p+48, 0x1.046bea5d76890p+49,
  0x1.046bea5d76890p+50, 0x1.046bea5d76890p+51, 0x1.1afa975da2400p+46, 0x1.1afa975da2420p+47,
  0x1.1afa975da2420p+48, 0x1.1afa975da2420p+49, 0x1.1afa975da2424p+50, 0x1.1afa975da2426p+51,
  0x1.afa975da24270p+48, 0x1.afa975da24270p+49, 0x1.afa975da24274p+50, 0x1.afa975da24274p+51,
  0x1.5f52ebb4484e8p+51, 0x1.7d4baed1213a4p+50, 0x1.7d4baed1213a6p+51, 0x1.f52ebb4484e98p+50,
  0x1.f52ebb4484e98p+51, 0x1.ea5d768909d32p+51, 0x1.d4baed1213a66p+51, 0x1.a975da24274cep+51,
  0x1.52ebb4484e99cp+51, 0x1.4baed1213a670p+50, 0x1.4baed1213a670p+51, 0x1.2ebb4484e99c4p+50,
  0x1.2ebb4484e99c6p+51, 0x1.75da24274ce38p+49, 0x1.75da24274ce38p+50, 0x1.75da24274ce38p+51,
  0x1.d768909d338e0p+50, 0x1.d768909d338e0p+51, 0x1.aed1213a671c0p+51, 0x1.5da24274ce380p+51,
  0x1.768909d338e04p+50, 0x1.768909d338e04p+51, 0x1.da24274ce3810p+50, 0x1.da24274ce3812p+51,
  0x1.b4484e99c7026p+51, 0x1.68909d338e04cp+51, 0x1.a24274ce38134p+50, 0x1.a24274ce38134p+51,
  0x1.4484e99c7026ap+51, 0x1.1213a671c09acp+50, 0x1.1213a671c09acp+51, 0x1.213a671c09ad0p+48,
  0x1.213a671c09ad0p+49, 0x1.213a671c09ad0p+50, 0x1.213a671c09ad0p+51, 0x1.09d338e04d688p+49,
  0x1.09d338e04d688p+50, 0x1.09d338e04d68ap+51, 0x1.3a671c09ad160p+47, 0x1.3a671c09ad170p+48,
  0x1.3a671c09ad178p+49, 0x1.3a671c09ad17cp+50, 0x1.3a671c09ad17cp+51, 0x1.d338e04d68be8p+49,
  0x1.d338e04d68becp+50, 0x1.d338e04d68beep+51, 0x1.a671c09ad17dep+51, 0x1.4ce38135a2fbep+51,
  0x1.338e04d68befcp+50, 0x1.338e04d68befcp+51, 0x1.9c7026b45f7e0p+49, 0x1.9c7026b45f7e4p+50,
  0x1.9c7026b45f7e4p+51, 0x1.38e04d68befc8p+51, 0x1.c7026b45f7e40p+49, 0x1.c7026b45f7e40p+50,
  0x1.c7026b45f7e40p+51, 0x1.8e04d68befc82p+51, 0x1.1c09ad17df904p+51, 0x1.c09ad17df9040p+48,
  0x1.c09ad17df9048p+49, 0x1.c09ad17df904cp+50, 0x1.c09ad17df904ep+51, 0x1.8135a2fbf209cp+51,
  0x1.026b45f7e4138p+51, 0x1.35a2fbf209c80p+45, 0x1.35a2fbf209cc0p+46, 0x1.35a2fbf209cc0p+47,
  0x1.35a2fbf209cc0p+48, 0x1.35a2fbf209cc8p+49, 0x1.35a2fbf209cc8p+50, 0x1.35a2fbf209cc8p+51,
  0x1.ad17df904e640p+49, 0x1.ad17df904e644p+50, 0x1.ad17df904e646p+51, 0x1.5a2fbf209cc8ep+51,
  0x1.68befc8273238p+50, 0x1.68befc827323ap+51, 0x1.a2fbf209cc8e8p+50, 0x1.a2fbf209cc8eap+51,
  0x1.45f7e413991d6p+51, 0x1.17df904e64758p+50, 0x1.17df904e64758p+51, 0x1.7df904e647580p+48,
  0x1.7df904e647588p+49, 0x1.7df904e64758cp+50, 0x1.7df904e64758ep+51, 0x1.f7e413991d638p+50,
  0x1.f7e413991d638p+51, 0x1.efc827323ac72p+51, 0x1.df904e64758e6p+51, 0x1.bf209cc8eb1ccp+51,
  0x1.7e413991d6398p+51, 0x1.f904e64758e60p+50, 0x1.f904e64758e60p+51, 0x1.f209cc8eb1cc0p+51,
  0x1.e413991d63982p+51, 0x1.c827323ac7306p+51, 0x1.904e64758e60cp+51, 0x1.209cc8eb1cc1ap+51,
  0x1.04e64758e60d0p+49, 0x1.04e64758e60d4p+50, 0x1.04e64758e60d4p+51, 0x1.3991d63983500p+46,
  0x1.3991d63983520p+47, 0x1.3991d63983530p+48, 0x1.3991d63983530p+49, 0x1.3991d63983530p+50,
  0x1.3991d63983532p+51, 0x1.cc8eb1cc1a998p+49, 0x1.cc8eb1cc1a99cp+50, 0x1.cc8eb1cc1a99cp+51,
  0x1.991d639835338p+51, 0x1.323ac7306a672p+51, 0x1.91d6398353398p+49, 0x1.91d639835339cp+50,
  0x1.91d639835339ep+51, 0x1.23ac7306a673ep+51, 0x1.1d639835339f0p+49, 0x1.1d639835339f4p+50,
  0x1.1d639835339f4p+51, 0x1.d639835339f40p+48, 0x1.d639835339f48p+49, 0x1.d639835339f48p+50,
  0x1.d639835339f48p+51, 0x1.ac7306a673e92p+51, 0x1.58e60d4ce7d26p+51, 0x1.639835339f49cp+50,
  0x1.639835339f49cp+51, 0x1.8e60d4ce7d270p+50, 0x1.8e60d4ce7d272p+51, 0x1.1cc1a99cfa4e4p+51,
  0x1.cc1a99cfa4e40p+48, 0x1.cc1a99cfa4e40p+49, 0x1.cc1a99cfa4e40p+50, 0x1.cc1a99cfa4e42p+51,
  0x1.9835339f49c84p+51, 0x1.306a673e93908p+51, 0x1.835339f49c840p+49, 0x1.835339f49c844p+50,
  0x1.835339f49c844p+51, 0x1.06a673e93908ap+51, 0x1.a99cfa4e422c0p+46, 0x1.a99cfa4e422e0p+47,
  0x1.a99cfa4e422f0p+48, 0x1.a99cfa4e422f8p+49, 0x1.a99cfa4e422fcp+50, 0x1.a99cfa4e422fcp+51,
  0x1.5339f49c845f8p+51, 0x1.4ce7d272117e0p+50, 0x1.4ce7d272117e2p+51, 0x1.339f49c845f88p+50,
  0x1.339f49c845f8ap+51, 0x1.9cfa4e422fc58p+49, 0x1.9cfa4e422fc5cp+50, 0x1.9cfa4e422fc5cp+51,
  0x1.39f49c845f8bap+51, 0x1.cfa4e422fc5d8p+49, 0x1.cfa4e422fc5dcp+50, 0x1.cfa4e422fc5dep+51,
  0x1.9f49c845f8bbcp+51, 0x1.3e93908bf177ap+51, 0x1.f49c845f8bbd8p+49, 0x1.f49c845f8bbdcp+50,
  0x1.f49c845f8bbdep+51, 0x1.e93908bf177bep+51, 0x1.d272117e2ef7ep+51, 0x1.a4e422fc5defcp+51,
  0x1.49c845f8bbdf8p+51, 0x1.272117e2ef7e4p+50, 0x1.272117e2ef7e4p+51, 0x1.3908bf177bf20p+49,
  0x1.3908bf177bf24p+50, 0x1.3908bf177bf24p+51, 0x1.c845f8bbdf928p+49, 0x1.c845f8bbdf928p+50,
  0x1.c845f8bbdf928p+51, 0x1.908bf177bf250p+51, 0x1.2117e2ef7e4a0p+51, 0x1.08bf177bf2500p+49,
  0x1.08bf177bf2504p+50, 0x1.08bf177bf2506p+51, 0x1.17e2ef7e4a0e0p+47, 0x1.17e2ef7e4a0e0p+48,
  0x1.17e2ef7e4a0e8p+49, 0x1.17e2ef7e4a0ecp+50, 0x1.17e2ef7e4a0ecp+51, 0x1.7e2ef7e4a0ec0p+48,
  0x1.7e2ef7e4a0ec0p+49, 0x1.7e2ef7e4a0ec4p+50, 0x1.7e2ef7e4a0ec6p+51, 0x1.f8bbdf9283b1cp+50,
  0x1.f8bbdf9283b1ep+51, 0x1.f177bf250763ep+51, 0x1.e2ef7e4a0ec7ep+51, 0x1.c5defc941d8fep+51,
  0x1.8bbdf9283b1fep+51, 0x1.177bf250763fep+51, 0x1.77bf250763ff0p+48, 0x1.77bf250763ff0p+49,
  0x1.77bf250763ff0p+50, 0x1.77bf250763ff0p+51, 0x1.defc941d8ffc4p+50, 0x1.defc941d8ffc4p+51,
  0x1.bdf9283b1ff88p+51, 0x1.7bf250763ff12p+51, 0x1.efc941d8ffc48p+50, 0x1.efc941d8ffc4ap+51,
  0x1.df9283b1ff896p+51, 0x1.bf250763ff12ep+51, 0x1.7e4a0ec7fe25ep+51, 0x1.f9283b1ff897cp+50,
  0x1.f9283b1ff897ep+51, 0x1.f250763ff12fep+51, 0x1.e4a0ec7fe25fep+51, 0x1.c941d8ffc4bfep+51,
  0x1.9283b1ff897fep+51, 0x1.250763ff12ffep+51, 0x1.283b1ff897ff8p+49, 0x1.283b1ff897ffcp+50,
  0x1.283b1ff897ffcp+51, 0x1.41d8ffc4bffe8p+49, 0x1.41d8ffc4bffecp+50, 0x1.41d8ffc4bffeep+51,
  0x1.0763ff12fffbcp+50, 0x1.0763ff12fffbcp+51, 0x1.d8ffc4bffef00p+46, 0x1.d8ffc4bffef00p+47,
  0x1.d8ffc4bffef00p+48, 0x1.d8ffc4bffef00p+49, 0x1.d8ffc4bffef00p+50, 0x1.d8ffc4bffef02p+51,
  0x1.b1ff897ffde04p+51, 0x1.63ff12fffbc0ap+51, 0x1.8ffc4bffef02cp+50, 0x1.8ffc4bffef02cp+51,
  0x1.1ff897ffde058p+51, 0x1.ff897ffde0590p+48, 0x1.ff897ffde0598p+49, 0x1.ff897ffde0598p+50,
  0x1.ff897ffde0598p+51, 0x1.ff12fffbc0b30p+51, 0x1.fe25fff781660p+51, 0x1.fc4bffef02cc0p+51,
  0x1.f897ffde05980p+51, 0x1.f12fffbc0b300p+51, 0x1.e25fff7816602p+51, 0x1.c4bffef02cc06p+51,
  0x1.897ffde05980ep+51, 0x1.12fffbc0b301ep+51, 0x1.2fffbc0b301f0p+48, 0x1.2fffbc0b301f8p+49,
  0x1.2fffbc0b301fcp+50, 0x1.2fffbc0b301fcp+51, 0x1.7ffde05980fe8p+49, 0x1.7ffde05980fecp+50,
  0x1.7ffde05980feep+51, 0x1.fff7816603fbcp+50, 0x1.fff7816603fbcp+51, 0x1.ffef02cc07f78p+51,
  0x1.ffde05980fef2p+51, 0x1.ffbc0b301fde4p+51, 0x1.ff7816603fbcap+51, 0x1.fef02cc07f796p+51,
  0x1.fde05980fef2ep+51, 0x1.fbc0b301fde5ep+51, 0x1.f7816603fbcbcp+51, 0x1.ef02cc07f7978p+51,
  0x1.de05980fef2f0p+51, 0x1.bc0b301fde5e2p+51, 0x1.7816603fbcbc4p+51, 0x1.e05980fef2f10p+50,
  0x1.e05980fef2f10p+51, 0x1.c0b301fde5e22p+51, 0x1.816603fbcbc46p+51, 0x1.02cc07f79788cp+51,
  0x1.6603fbcbc4600p+45, 0x1.6603fbcbc4600p+46, 0x1.6603fbcbc4620p+47, 0x1.6603fbcbc4620p+48,
  0x1.6603fbcbc4628p+49, 0x1.6603fbcbc462cp+50, 0x1.6603fbcbc462cp+51, 0x1.980fef2f118b4p+50,
  0x1.980fef2f118b4p+51, 0x1.301fde5e2316ap+51, 0x1.80fef2f118b58p+49, 0x1.80fef2f118b58p+50,
  0x1.80fef2f118b5ap+51, 0x1.01fde5e2316b4p+51, 0x1.fde5e2316b400p+44, 0x1.fde5e2316b400p+45,
  0x1.fde5e2316b400p+46, 0x1.fde5e2316b400p+47, 0x1.fde5e2316b410p+48, 0x1.fde5e2316b410p+49,
  0x1.fde5e2316b414p+50, 0x1.fde5e2316b414p+51, 0x1.fbcbc462d6828p+51, 0x1.f79788c5ad052p+51,
  0x1.ef2f118b5a0a6p+51, 0x1.de5e2316b414cp+51, 0x1.bcbc462d6829ap+51, 0x1.79788c5ad0536p+51,
  0x1.e5e2316b414d8p+50, 0x1.e5e2316b414dap+51, 0x1.cbc462d6829b4p+51, 0x1.9788c5ad05368p+51,
  0x1.2f118b5a0a6d0p+51, 0x1.788c5ad053688p+49, 0x1.788c5ad05368cp+50, 0x1.788c5ad05368ep+51,
  0x1.e2316b414da3cp+50, 0x1.e2316b414da3ep+51, 0x1.c462d6829b47cp+51, 0x1.88c5ad05368fap+51,
  0x1.118b5a0a6d1f6p+51, 0x1.18b5a0a6d1f60p+48, 0x1.18b5a0a6d1f68p+49, 0x1.18b5a0a6d1f6cp+50,
  0x1.18b5a0a6d1f6cp+51, 0x1.8b5a0a6d1f6d0p+48, 0x1.8b5a0a6d1f6d0p+49, 0x1.8b5a0a6d1f6d0p+50,
  0x1.8b5a0a6d1f6d2p+51, 0x1.16b414da3eda6p+51, 0x1.6b414da3eda60p+48, 0x1.6b414da3eda68p+49,
  0x1.6b414da3eda6cp+50, 0x1.6b414da3eda6cp+51, 0x1.ad05368fb69b0p+50, 0x1.ad05368fb69b2p+51,
  0x1.5a0a6d1f6d366p+51, 0x1.6829b47db4d9cp+50, 0x1.6829b47db4d9ep+51, 0x1.a0a6d1f6d367cp+50,
  0x1.a0a6d1f6d367ep+51, 0x1.414da3eda6cfcp+51, 0x1.05368fb69b3f4p+50, 0x1.05368fb69b3f6p+51,
  0x1.4da3eda6cfd80p+46, 0x1.4da3eda6cfd80p+47, 0x1.4da3eda6cfd90p+48, 0x1.4da3eda6cfd98p+49,
  0x1.4da3eda6cfd9cp+50, 0x1.4da3eda6cfd9ep+51, 0x1.368fb69b3f678p+50, 0x1.368fb69b3f678p+51,
  0x1.b47db4d9fb3c8p+49, 0x1.b47db4d9fb3c8p+50, 0x1.b47db4d9fb3c8p+51, 0x1.68fb69b3f6792p+51,
  0x1.a3eda6cfd9e4cp+50, 0x1.a3eda6cfd9e4ep+51, 0x1.47db4d9fb3c9ep+51, 0x1.1f6d367ecf27cp+50,
  0x1.1f6d367ecf27cp+51, 0x1.f6d367ecf27c0p+48, 0x1.f6d367ecf27c8p+49, 0x1.f6d367ecf27c8p+50,
  0x1.f6d367ecf27cap+51, 0x1.eda6cfd9e4f96p+51, 0x1.db4d9fb3c9f2cp+51, 0x1.b69b3f6793e58p+51,
  0x1.6d367ecf27cb0p+51, 0x1.b4d9fb3c9f2c0p+50, 0x1.b4d9fb3c9f2c2p+51, 0x1.69b3f6793e584p+51,
  0x1.a6cfd9e4f9610p+50, 0x1.a6cfd9e4f9612p+51, 0x1.4d9fb3c9f2c26p+51, 0x1.367ecf27cb098p+50,
  0x1.367ecf27cb09ap+51, 0x1.b3f6793e584d8p+49, 0x1.b3f6793e584d8p+50, 0x1.b3f6793e584dap+51,
  0x1.67ecf27cb09b6p+51, 0x1.9fb3c9f2c26dcp+50, 0x1.9fb3c9f2c26dcp+51, 0x1.3f6793e584dbap+51,
  0x1.fb3c9f2c26dd0p+49, 0x1.fb3c9f2c26dd0p+50, 0x1.fb3c9f2c26dd2p+51, 0x1.f6793e584dba6p+51,
  0x1.ecf27cb09b74ep+51, 0x1.d9e4f96136e9ep+51, 0x1.b3c9f2c26dd3cp+51, 0x1.6793e584dba7ap+51,
  0x1.9e4f96136e9e8p+50, 0x1.9e4f96136e9e8p+51, 0x1.3c9f2c26dd3d0p+51, 0x1.e4f96136e9e88p+49,
  0x1.e4f96136e9e8cp+50, 0x1.e4f96136e9e8cp+51, 0x1.c9f2c26dd3d18p+51, 0x1.93e584dba7a30p+51,
  0x1.27cb09b74f462p+51, 0x1.3e584dba7a318p+49, 0x1.3e584dba7a31cp+50, 0x1.3e584dba7a31ep+51,
  0x1.f2c26dd3d18f8p+49, 0x1.f2c26dd3d18fcp+50, 0x1.f2c26dd3d18fcp+51, 0x1.e584dba7a31fap+51,
  0x1.cb09b74f463f6p+51, 0x1.96136e9e8c7ecp+51, 0x1.2c26dd3d18fd8p+51, 0x1.6136e9e8c7ec8p+49,
  0x1.6136e9e8c7eccp+50, 0x1.6136e9e8c7eccp+51, 0x1.84dba7a31fb34p+50, 0x1.84dba7a31fb34p+51,
  0x1.09b74f463f668p+51, 0x1.36e9e8c7ecd20p+47, 0x1.36e9e8c7ecd30p+48, 0x1.36e9e8c7ecd38p+49,
  0x1.36e9e8c7ecd3cp+50, 0x1.36e9e8c7ecd3cp+51, 0x1.b74f463f669e0p+49, 0x1.b74f463f669e4p+50,
  0x1.b74f463f669e4p+51, 0x1.6e9e8c7ecd3cap+51, 0x1.ba7a31fb34f2cp+50, 0x1.ba7a31fb34f2ep+51,
  0x1.74f463f669e5ep+51, 0x1.d3d18fd9a797cp+50, 0x1.d3d18fd9a797ep+51, 0x1.a7a31fb34f2fep+51,
  0x1.4f463f669e5fep+51, 0x1.3d18fd9a797f8p+50, 0x1.3d18fd9a797fap+51, 0x1.e8c7ecd3cbfd0p+49,
  0x1.e8c7ecd3cbfd4p+50, 0x1.e8c7ecd3cbfd4p+51, 0x1.d18fd9a797fa8p+51, 0x1.a31fb34f2ff50p+51,
  0x1.463f669e5fea2p+51, 0x1.18fd9a797fa88p+50, 0x1.18fd9a797fa8ap+51, 0x1.8fd9a797fa8b0p+48,
  0x1.8fd9a797fa8b0p+49, 0x1.8fd9a797fa8b4p+50, 0x1.8fd9a797fa8b4p+51, 0x1.1fb34f2ff516ap+51,
  0x1.fb34f2ff516b0p+48, 0x1.fb34f2ff516b8p+49, 0x1.fb34f2ff516b8p+50, 0x1.fb34f2ff516bap+51,
  0x1.f669e5fea2d74p+51, 0x1.ecd3cbfd45aeap+51, 0x1.d9a797fa8b5d4p+51, 0x1.b34f2ff516ba8p+51,
  0x1.669e5fea2d752p+51, 0x1.9a797fa8b5d48p+50, 0x1.9a797fa8b5d48p+51, 0x1.34f2ff516ba92p+51,
  0x1.a797fa8b5d498p+49, 0x1.a797fa8b5d49cp+50, 0x1.a797fa8b5d49ep+51, 0x1.4f2ff516ba93cp+51,
  0x1.3cbfd45aea4f4p+50, 0x1.3cbfd45aea4f6p+51, 0x1.e5fea2d7527b8p+49, 0x1.e5fea2d7527b8p+50,
  0x1.e5fea2d7527bap+51, 0x1.cbfd45aea4f74p+51, 0x1.97fa8b5d49eeap+51, 0x1.2ff516ba93dd6p+51,
  0x1.7fa8b5d49eeb0p+49, 0x1.7fa8b5d49eeb0p+50, 0x1.7fa8b5d49eeb0p+51, 0x1.fea2d7527bac4p+50,
  0x1.fea2d7527bac6p+51, 0x1.fd45aea4f758ep+51, 0x1.fa8b5d49eeb1ep+51, 0x1.f516ba93dd63ep+51,
  0x1.ea2d7527bac7ep+51, 0x1.d45aea4f758fcp+51, 0x1.a8b5d49eeb1fap+51, 0x1.516ba93dd63f4p+51,
  0x1.45aea4f758fd4p+50, 0x1.45aea4f758fd6p+51, 0x1.16ba93dd63f5cp+50, 0x1.16ba93dd63f5ep+51,
  0x1.6ba93dd63f5f0p+48, 0x1.6ba93dd63f5f0p+49, 0x1.6ba93dd63f5f0p+50, 0x1.6ba93dd63f5f2p+51,
  0x1.aea4f758fd7c8p+50, 0x1.aea4f758fd7cap+51, 0x1.5d49eeb1faf96p+51, 0x1.7527bac7ebe5cp+50,
  0x1.7527bac7ebe5ep+51, 0x1.d49eeb1faf97cp+50, 0x1.d49eeb1faf97cp+51, 0x1.a93dd63f5f2f8p+51,
  0x1.527bac7ebe5f0p+51, 0x1.49eeb1faf97c4p+50, 0x1.49eeb1faf97c4p+51, 0x1.27bac7ebe5f14p+50,
  0x1.27bac7ebe5f16p+51, 0x1.3dd63f5f2f8b8p+49, 0x1.3dd63f5f2f8bcp+50, 0x1.3dd63f5f2f8bcp+51,
  0x1.eeb1faf97c5e8p+49, 0x1.eeb1faf97c5ecp+50, 0x1.eeb1faf97c5ecp+51, 0x1.dd63f5f2f8bd8p+51,
  0x1.bac7ebe5f17b2p+51, 0x1.758fd7cbe2f66p+51, 0x1.d63f5f2f8bd9cp+50, 0x1.d63f5f2f8bd9ep+51,
  0x1.ac7ebe5f17b3cp+51, 0x1.58fd7cbe2f67ap+51, 0x1.63f5f2f8bd9e8p+50, 0x1.63f5f2f8bd9e8p+51,
  0x1.8fd7cbe2f67a0p+50, 0x1.8fd7cbe2f67a0p+51, 0x1.1faf97c5ecf40p+51, 0x1.faf97c5ecf410p+48,
  0x1.faf97c5ecf418p+49, 0x1.faf97c5ecf41cp+50, 0x1.faf97c5ecf41cp+51, 0x1.f5f2f8bd9e838p+51,
  0x1.ebe5f17b3d072p+51, 0x1.d7cbe2f67a0e6p+51, 0x1.af97c5ecf41cep+51, 0x1.5f2f8bd9e839cp+51,
  0x1.7cbe2f67a0e70p+50, 0x1.7cbe2f67a0e72p+51, 0x1.f2f8bd9e839ccp+50, 0x1.f2f8bd9e839cep+51,
  0x1.e5f17b3d0739ep+51, 0x1.cbe2f67a0e73ep+51, 0x1.97c5ecf41ce7cp+51, 0x1.2f8bd9e839cfap+51,
  0x1.7c5ecf41ce7d8p+49, 0x1.7c5ecf41ce7dcp+50, 0x1.7c5ecf41ce7dep+51, 0x1.f17b3d0739f78p+50,
  0x1.f17b3d0739f78p+51, 0x1.e2f67a0e73ef0p+51, 0x1.c5ecf41ce7de2p+51, 0x1.8bd9e839cfbc4p+51,
  0x1.17b3d0739f78ap+51, 0x1.7b3d0739f78a0p+48, 0x1.7b3d0739f78a0p+49, 0x1.7b3d0739f78a4p+50,
  0x1.7b3d0739f78a4p+51, 0x1.ecf41ce7de294p+50, 0x1.ecf41ce7de294p+51, 0x1.d9e839cfbc528p+51,
  0x1.b3d0739f78a52p+51, 0x1.67a0e73ef14a4p+51, 0x1.9e839cfbc5294p+50, 0x1.9e839cfbc5294p+51,
  0x1.3d0739f78a528p+51, 0x1.e839cfbc52948p+49, 0x1.e839cfbc52948p+50, 0x1.e839cfbc52948p+51,
  0x1.d0739f78a5292p+51, 0x1.a0e73ef14a524p+51, 0x1.41ce7de294a4ap+51, 0x1.0739f78a5292cp+50,
  0x1.0739f78a5292ep+51, 0x1.ce7de294a4b80p+46, 0x1.ce7de294a4ba0p+47, 0x1.ce7de294a4ba0p+48,
  0x1.ce7de294a4ba8p+49, 0x1.ce7de294a4ba8p+50, 0x1.ce7de294a4ba8p+51, 0x1.9cfbc52949752p+51,
  0x1.39f78a5292ea6p+51, 0x1.cfbc529497530p+49, 0x1.cfbc529497534p+50, 0x1.cfbc529497534p+51,
  0x1.9f78a5292ea6ap+51, 0x1.3ef14a525d4d6p+51, 0x1.f78a5292ea6b8p+49, 0x1.f78a5292ea6bcp+50,
  0x1.f78a5292ea6bep+51, 0x1.ef14a525d4d7ep+51, 0x1.de294a4ba9afep+51, 0x1.bc529497535fcp+51,
  0x1.78a5292ea6bfap+51, 0x1.e294a4ba9afecp+50, 0x1.e294a4ba9afecp+51, 0x1.c529497535fdap+51,
  0x1.8a5292ea6bfb4p+51, 0x1.14a525d4d7f6ap+51, 0x1.4a525d4d7f6b0p+48, 0x1.4a525d4d7f6b8p+49,
  0x1.4a525d4d7f6bcp+50, 0x1.4a525d4d7f6bep+51, 0x1.29497535fdafcp+50, 0x1.29497535fdafcp+51,
  0x1.4a4ba9afed7e8p+49, 0x1.4a4ba9afed7ecp+50, 0x1.4a4ba9afed7ecp+51, 0x1.292ea6bfb5fb0p+50,
  0x1.292ea6bfb5fb0p+51, 0x1.497535fdafd88p+49, 0x1.497535fdafd88p+50, 0x1.497535fdafd88p+51,
  0x1.25d4d7f6bf620p+50, 0x1.25d4d7f6bf622p+51, 0x1.2ea6bfb5fb118p+49, 0x1.2ea6bfb5fb11cp+50,
  0x1.2ea6bfb5fb11ep+51, 0x1.7535fdafd88f8p+49, 0x1.7535fdafd88fcp+50, 0x1.7535fdafd88fcp+51,
  0x1.d4d7f6bf623f0p+50, 0x1.d4d7f6bf623f0p+51, 0x1.a9afed7ec47e2p+51, 0x1.535fdafd88fc6p+51,
  0x1.4d7f6bf623f18p+50, 0x1.4d7f6bf623f1ap+51, 0x1.35fdafd88fc68p+50, 0x1.35fdafd88fc6ap+51,
  0x1.afed7ec47e350p+49, 0x1.afed7ec47e354p+50, 0x1.afed7ec47e356p+51, 0x1.5fdafd88fc6aep+51,
  0x1.7f6bf623f1ab8p+50, 0x1.7f6bf623f1abap+51, 0x1.fdafd88fc6ae8p+50, 0x1.fdafd88fc6ae8p+51,
  0x1.fb5fb11f8d5d0p+51, 0x1.f6bf623f1aba0p+51, 0x1.ed7ec47e35742p+51, 0x1.dafd88fc6ae84p+51,
  0x1.b5fb11f8d5d08p+51, 0x1.6bf623f1aba10p+51, 0x1.afd88fc6ae840p+50, 0x1.afd88fc6ae842p+51,
  0x1.5fb11f8d5d084p+51, 0x1.7ec47e3574214p+50, 0x1.7ec47e3574214p+51, 0x1.fb11f8d5d0854p+50,
  0x1.fb11f8d5d0856p+51, 0x1.f623f1aba10acp+51, 0x1.ec47e35742158p+51, 0x1.d88fc6ae842b0p+51,
  0x1.b11f8d5d08560p+51, 0x1.623f1aba10ac0p+51, 0x1.88fc6ae842b00p+50, 0x1.88fc6ae842b00p+51,
  0x1.11f8d5d085602p+51, 0x1.1f8d5d0856030p+48, 0x1.1f8d5d0856030p+49, 0x1.1f8d5d0856030p+50,
  0x1.1f8d5d0856032p+51, 0x1.f8d5d08560330p+48, 0x1.f8d5d08560330p+49, 0x1.f8d5d08560330p+50,
  0x1.f8d5d08560330p+51, 0x1.f1aba10ac0660p+51, 0x1.e357421580cc0p+51,
};
static inline void loom_dtwo_sum(double a, double b, double* s, double* e) {
  double t = a + b, bv = t - a;
  *s = t;
  *e = (a - (t - bv)) + (b - bv);
}
/* |x| = n pi/2 + rh + rl, |rh| <= pi/4 (and a little), n mod 4 in *q. Below 2^29 by pi/2 in
   three parts (the first product exact, the second as an exact pair); above, by the bits of
   2/pi that matter at x's exponent (Payne-Hanek): |x| = m 2^e, m a 53-bit integer, and
   (2^e 2/pi) mod 4 taken as four 52-bit windows W0..W3, m W0 .. m W2 as exact pairs, their
   sum mod 4 carried exactly (TwoSum) until the nearest integer is taken off. Both are
   computed for every lane. */
static inline __attribute__((always_inline)) double loom_dtrig_reduce(double x, double* rl, int64_t* q,
                                                                     const int strict, int* seen) {
  double a = __builtin_fabs(x);
  a = a <= 0x1.fffffffffffffp+1023 ? a : 0.0; /* inf, NaN: anything; the caller gives NaN */
  /* Cody-Waite */
  double n = __builtin_rint(a * 0x1.45f306dc9c883p-1);
  double t1 = LOOM_FMA(-n, 0x1.921fb54442d18p+0, a);
  double ph = n * 0x1.1a62633145c07p-54, pl = LOOM_FMA(n, 0x1.1a62633145c07p-54, -ph);
  double sh, sl;
  loom_dtwo_sum(t1, -ph, &sh, &sl);
  double lo = (sl - pl) - n * -0x1.f1976b7ed8fbcp-110;
  double ch = sh + lo, cl = lo - (ch - sh);
  int big = a > 0x1p29;
  *seen |= big;
  if (!strict) { /* NOTE [Deferred checks]: a big argument reruns the kernel strict */
    *q = (int64_t)(big ? 0.0 : n) & 3;
    *rl = cl;
    return ch;
  }
  /* Payne-Hanek */
  uint64_t b = loom_dbits(big ? a : 0x1p29);
  int64_t e = (int64_t)(b >> 52) - 1075; /* a = m 2^e */
  double m = (double)((b & 0xfffffffffffffull) | 0x10000000000000ull);
  int64_t s = e + 23; /* the window from bit e - 1 */
  double w0 = loom_2opi[s] * 0x1p-50, w1 = loom_2opi[s + 52] * 0x1p-102;
  double w2 = loom_2opi[s + 104] * 0x1p-154, w3 = loom_2opi[s + 156] * 0x1p-206;
  double h0 = m * w0, l0 = LOOM_FMA(m, w0, -h0);
  double h1 = m * w1, l1 = LOOM_FMA(m, w1, -h1);
  double h2 = m * w2, l2 = LOOM_FMA(m, w2, -h2);
  double h3 = m * w3;
  h0 = h0 - 4.0 * __builtin_floor(h0 * 0.25);
  double A = h0 + l0;
  A = A - 4.0 * __builtin_floor(A * 0.25);
  double B, eb;
  loom_dtwo_sum(A, h1, &B, &eb);
  B = B - 4.0 * __builtin_floor(B * 0.25);
  double k = __builtin_rint(B);
  double f = B - k, e1, e2, e3;
  loom_dtwo_sum(f, h2, &f, &e1);
  loom_dtwo_sum(f, eb, &f, &e2);
  loom_dtwo_sum(f, l1, &f, &e3);
  double tail = ((e1 + e2) + e3) + (l2 + h3);
  double fh = f + tail, fl = tail - (fh - f);
  /* times pi/2 as a pair */
  double yh = fh * 0x1.921fb54442d18p+0;
  double yl = LOOM_FMA(fh, 0x1.921fb54442d18p+0, -yh) + (fh * 0x1.1a62633145c07p-54 + fl * 0x1.921fb54442d18p+0);
  double ph2 = yh + yl, pl2 = yl - (ph2 - yh);
  double kk = big ? k : n;
  *q = (int64_t)kk & 3;
  *rl = big ? pl2 : cl;
  return big ? ph2 : ch;
}
/* sin and cos of rh + rl, |rh| <= pi/4: as pairs (hi returned, lo in *lo). */
static inline double loom_dsin_pair(double r, double rl, double* lo) {
  double z = r * r;
  double p = LOOM_FMA(z, -0x1.ab16f5caa198ap-41, 0x1.61217d9252c03p-33);
  p = LOOM_FMA(z, p, -0x1.ae645410e937bp-26);
  p = LOOM_FMA(z, p, 0x1.71de3a545f836p-19);
  p = LOOM_FMA(z, p, -0x1.a01a01a01992fp-13);
  p = LOOM_FMA(z, p, 0x1.1111111111110p-7);
  p = LOOM_FMA(z, p, -0x1.5555555555555p-3);
  /* sin(r + rl) = r + r^3 p + rl (1 - r^2/2) */
  *lo = LOOM_FMA(r * z, p, LOOM_FMA(-0.5 * z, rl, rl));
  return r;
}
static inline double loom_dcos_pair(double r, double rl, double* lo) {
  double z = r * r, zl = LOOM_FMA(r, r, -z);
  double p = LOOM_FMA(z, 0x1.ab779550c8d9bp-45, -0x1.9394b8bd50ae1p-37);
  p = LOOM_FMA(z, p, 0x1.1eed8deac3dfep-29);
  p = LOOM_FMA(z, p, -0x1.27e4fb77125c5p-22);
  p = LOOM_FMA(z, p, 0x1.a01a01a019d06p-16);
  p = LOOM_FMA(z, p, -0x1.6c16c16c16c16p-10);
  p = LOOM_FMA(z, p, 0x1.5555555555555p-5);
  double hz = 0.5 * z, w = 1.0 - hz, e = (1.0 - w) - hz; /* hz <= 0.31: exact pair */
  /* cos(r + rl) = 1 - r^2/2 + r^4 p - rl r */
  *lo = e + (LOOM_FMA(z * z, p, -0.5 * zl) - r * rl);
  return w;
}
/* |x| = q pi/2 + r; sin r and cos r as pairs. */
static inline __attribute__((always_inline)) int64_t loom_dtrig_parts(double x, const int strict,
    int* seen, double* sh, double* sl, double* ch, double* cl) {
  double rl; int64_t q;
  double r = loom_dtrig_reduce(x, &rl, &q, strict, seen);
  *sh = loom_dsin_pair(r, rl, sl);
  *ch = loom_dcos_pair(r, rl, cl);
  return q;
}
static inline __attribute__((always_inline)) double loom_sind_k(double x, const int strict, int* seen) {
  double sh, sl, ch, cl;
  int64_t q = loom_dtrig_parts(x, strict, seen, &sh, &sl, &ch, &cl);
  double v = (q & 1) ? ch + cl : sh + sl;
  v = (q & 2) ? -v : v;
  v = x < 0.0 ? -v : v;
  return x == 0.0 ? x : __builtin_isfinite(x) ? v : x - x;
}
static inline __attribute__((always_inline)) double loom_cosd_k(double x, const int strict, int* seen) {
  double sh, sl, ch, cl;
  int64_t q = loom_dtrig_parts(x, strict, seen, &sh, &sl, &ch, &cl);
  double v = (q & 1) ? sh + sl : ch + cl;
  v = ((q + 1) & 2) ? -v : v;
  return __builtin_isfinite(x) ? v : x - x;
}
static inline __attribute__((always_inline)) double loom_tand_k(double x, const int strict, int* seen) {
  double sh, sl, ch, cl;
  int64_t q = loom_dtrig_parts(x, strict, seen, &sh, &sl, &ch, &cl);
  /* tan = s / c, or -c / s in odd quadrants: the quotient corrected by its remainder */
  int odd = q & 1;
  double s2 = sh + sl, c2 = ch + cl;
  sl = sl - (s2 - sh); cl = cl - (c2 - ch); sh = s2; ch = c2; /* normalized pairs */
  double nh = odd ? ch : sh, nl = odd ? cl : sl, dh = odd ? sh : ch, dl = odd ? sl : cl;
  double t = nh / dh;
  t = t + (LOOM_FMA(-t, dh, nh) + (nl - t * dl)) / dh;
  t = odd ? -t : t;
  t = x < 0.0 ? -t : t;
  return x == 0.0 ? x : __builtin_isfinite(x) ? t : x - x;
}
#else
#define loom_sind_k(x, strict, seen) sin(x)
#define loom_cosd_k(x, strict, seen) cos(x)
#define loom_tand_k(x, strict, seen) tan(x)
#endif
)";
}

}  // namespace loom
