# cuda.cmake — included by the root CMakeLists.txt (the CUDA language must be enabled
# at the top, since every program that links kernels links CUDA code): finds CUDA
# (nvcc, the CUDA runtime, cuBLAS) and NCCL (header and library) as TUNER_CUDA and
# TUNER_NCCL ask (AUTO, ON or OFF), says what it found and what it builds, and sets
# TUNER_HAVE_CUDA, TUNER_HAVE_NCCL and TUNER_CUDA_FLAGS (nvcc's warning flags).
# nvcc is looked for in $CUDACXX, on PATH, in $CUDA_HOME/bin and in /usr/local/cuda/bin.
# Design: docs/architecture.md, "Build".

string(TOUPPER "${TUNER_CUDA}" TUNER_CUDA_MODE)
string(TOUPPER "${TUNER_NCCL}" TUNER_NCCL_MODE)
foreach(_opt CUDA NCCL)
  if(NOT TUNER_${_opt}_MODE MATCHES "^(AUTO|ON|OFF)$")
    message(FATAL_ERROR "TUNER_${_opt} must be AUTO, ON or OFF, not '${TUNER_${_opt}}'")
  endif()
endforeach()
set(TUNER_CUDA_ARCHITECTURES "80-real;90-real;90-virtual" CACHE STRING
    "CUDA architectures: SASS for sm_80 (A100) and sm_90 (H100, H200), PTX for compute_90 (later GPUs)")

set(TUNER_HAVE_CUDA OFF)
set(TUNER_HAVE_NCCL OFF)
set(_cuda_why "")
if(TUNER_CUDA_MODE STREQUAL "OFF")
  message(STATUS "CUDA: not used (TUNER_CUDA=OFF): building the CPU backend only")
else()
  if(CMAKE_CUDA_COMPILER)
    set(_nvcc "${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX})
    set(_nvcc "$ENV{CUDACXX}")
  else()
    find_program(TUNER_NVCC NAMES nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
                 PATHS /usr/local/cuda/bin)
    set(_nvcc "${TUNER_NVCC}")
  endif()
  if(NOT _nvcc)
    set(_cuda_why "no nvcc on PATH, in \$CUDA_HOME/bin or in /usr/local/cuda/bin")
  else()
    if(NOT CMAKE_CUDA_COMPILER)
      set(ENV{CUDACXX} "${_nvcc}")
      include(CheckLanguage)
      check_language(CUDA)
    endif()
    if(NOT CMAKE_CUDA_COMPILER)
      set(_cuda_why "${_nvcc} cannot build a CUDA program (see CMakeFiles/CMakeError.log)")
    else()
      set(CMAKE_CUDA_ARCHITECTURES "${TUNER_CUDA_ARCHITECTURES}")
      set(CMAKE_CUDA_STANDARD 17)
      set(CMAKE_CUDA_STANDARD_REQUIRED ON)
      set(CMAKE_CUDA_EXTENSIONS OFF)
      # The runtime linked in: the programs start without CUDA's libraries and run on
      # the CPU; cuBLAS and NCCL are loaded when a GPU is used (kernels/cuda.h).
      set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
      enable_language(CUDA)
      find_package(CUDAToolkit)
      if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static)
        set(_cuda_why "the CUDA toolkit beside ${CMAKE_CUDA_COMPILER} has no static CUDA runtime (libcudart_static.a)")
      else()
        find_file(TUNER_CUBLAS_HEADER cublas_v2.h HINTS ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
        find_library(TUNER_CUBLAS_LIBRARY cublas HINTS ${CUDAToolkit_LIBRARY_DIR} NO_DEFAULT_PATH)
        if(NOT TUNER_CUBLAS_HEADER OR NOT TUNER_CUBLAS_LIBRARY)
          set(_cuda_why "no cuBLAS (cublas_v2.h and libcublas) in ${CUDAToolkit_INCLUDE_DIRS} and ${CUDAToolkit_LIBRARY_DIR}")
        else()
          set(TUNER_HAVE_CUDA ON)
        endif()
      endif()
    endif()
  endif()
  if(TUNER_HAVE_CUDA)
    message(STATUS "CUDA: nvcc ${CMAKE_CUDA_COMPILER_VERSION} (${CMAKE_CUDA_COMPILER}), "
                   "cuBLAS ${TUNER_CUBLAS_LIBRARY}: building the CUDA backend for "
                   "${CMAKE_CUDA_ARCHITECTURES}")
  elseif(TUNER_CUDA_MODE STREQUAL "ON")
    message(FATAL_ERROR "TUNER_CUDA=ON, but ${_cuda_why}. hint: install the CUDA toolkit "
                        "(nvcc, cuBLAS; CUDA 12 or newer), point CUDACXX at its nvcc, or "
                        "configure with -DTUNER_CUDA=AUTO or OFF for a CPU-only build")
  else()
    message(STATUS "CUDA: not found (${_cuda_why}): building the CPU backend only. hint: "
                   "install the CUDA toolkit or set CUDACXX to build the GPU backend")
  endif()
endif()

if(TUNER_HAVE_CUDA AND NOT TUNER_NCCL_MODE STREQUAL "OFF")
  find_path(TUNER_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ENV NCCL_HOME
            PATH_SUFFIXES include PATHS /usr/local/include /usr/include)
  find_library(TUNER_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${CUDAToolkit_LIBRARY_DIR} ENV NCCL_HOME PATH_SUFFIXES lib lib64
               PATHS /usr/local/cuda/lib64 /usr/local/lib /usr/lib/x86_64-linux-gnu)
  if(TUNER_NCCL_INCLUDE_DIR AND TUNER_NCCL_LIBRARY)
    file(STRINGS "${TUNER_NCCL_INCLUDE_DIR}/nccl.h" _nccl_defs
         REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
    set(_nccl_version "")
    foreach(_part MAJOR MINOR PATCH)
      string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _m "${_nccl_defs}")
      list(APPEND _nccl_version "${CMAKE_MATCH_1}")
    endforeach()
    string(REPLACE ";" "." _nccl_version "${_nccl_version}")
    set(TUNER_HAVE_NCCL ON)
    message(STATUS "NCCL: ${_nccl_version} (${TUNER_NCCL_INCLUDE_DIR}/nccl.h, "
                   "${TUNER_NCCL_LIBRARY}): NCCL collectives between GPUs, loaded at run time")
  elseif(TUNER_NCCL_MODE STREQUAL "ON")
    message(FATAL_ERROR "TUNER_NCCL=ON, but NCCL was not found (nccl.h: "
                        "${TUNER_NCCL_INCLUDE_DIR}; libnccl: ${TUNER_NCCL_LIBRARY}). hint: "
                        "install NCCL 2 beside the CUDA toolkit or set NCCL_HOME, or "
                        "configure with -DTUNER_NCCL=AUTO")
  else()
    message(STATUS "NCCL: not found (nccl.h and libnccl): GPUs exchange gradients through "
                   "the host. hint: install NCCL 2 or set NCCL_HOME")
  endif()
elseif(TUNER_NCCL_MODE STREQUAL "ON")
  message(FATAL_ERROR "TUNER_NCCL=ON needs the CUDA backend, which this configuration does "
                      "not build (TUNER_CUDA=${TUNER_CUDA})")
endif()

# nvcc's flags: the host compiler's warnings through -Xcompiler, and with TUNER_WERROR
# every warning of nvcc and of the host compiler an error.
set(TUNER_CUDA_FLAGS -Xcompiler=-Wall -Xcompiler=-Wextra)
if(TUNER_WERROR)
  list(APPEND TUNER_CUDA_FLAGS --Werror=all-warnings -Xcompiler=-Werror)
endif()
