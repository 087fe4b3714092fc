# kvstash_enable_cuda(): turns on the CUDA language when nvcc can be found, and sets
# KVSTASH_HAVE_CUDA. Used by the top-level project and by the standalone cuda/ project.
#
# nvcc is looked up in this order: CMAKE_CUDA_COMPILER, $CUDACXX, PATH, $CUDA_HOME/bin,
# $CUDA_PATH/bin, /usr/local/cuda/bin (where the NVIDIA packages put it, often not on PATH).
# Default architectures: 80;90 (A100, H100). "native" needs a GPU at configure time.
include(CheckLanguage)

macro(kvstash_enable_cuda)
  set(KVSTASH_HAVE_CUDA OFF)
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(KVSTASH_NVCC nvcc
      HINTS ENV CUDA_HOME ENV CUDA_PATH
      PATH_SUFFIXES bin
      PATHS /usr/local/cuda/bin /usr/local/cuda)
    if(KVSTASH_NVCC)
      set(CMAKE_CUDA_COMPILER "${KVSTASH_NVCC}" CACHE FILEPATH "CUDA compiler")
    endif()
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures" FORCE)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(KVSTASH_HAVE_CUDA ON)
    message(STATUS "kvstash: CUDA kernels enabled (${CMAKE_CUDA_COMPILER}, "
                   "CUDA ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "kvstash: nvcc not found; CUDA kernels skipped (the CPU reference "
                   "paged copy is still built). Set CMAKE_CUDA_COMPILER or CUDACXX to enable.")
  endif()
endmacro()
