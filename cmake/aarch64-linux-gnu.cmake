# Cross build for 64-bit ARM Linux (Raspberry Pi 4/5, Graviton, Ampere) on a
# Debian x86-64 machine:
#
#   dpkg --add-architecture arm64 && apt-get update
#   scripts/install-deps.sh --arm64
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
#   cmake --build build-arm64 && ctest --test-dir build-arm64
#
# Debian's cross compiler (g++-aarch64-linux-gnu) searches the multiarch
# directories itself, so the arm64 -dev packages (/usr/include,
# /usr/lib/aarch64-linux-gnu) are found without a sysroot. The tests run
# through qemu-aarch64-static (CMake's cross-compiling emulator); binaries
# the tests start themselves are started through it too (tests/support).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The loader and libraries of the arm64 packages are where the multiarch
# layout puts them, so qemu needs no prefix of its own.
find_program(CLMCACHE_QEMU_AARCH64 qemu-aarch64-static qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${CLMCACHE_QEMU_AARCH64})

# Packages are looked up for the target only: arm64 libraries and their
# pkg-config files; programs (the compiler's helpers) from the host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
