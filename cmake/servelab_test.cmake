# servelab_add_test(NAME <name> SOURCES a.cc b.cc LIBS servelab_x ... [LABELS l] [PREFIX p.])
# PREFIX is put before every discovered test name (`ctest -R p` then selects the module's tests).
# One GoogleTest executable per test file group, registered with ctest through gtest_discover_tests.
include(GoogleTest)
function(servelab_add_test)
  cmake_parse_arguments(T "" "NAME;PREFIX" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  # A module's tests are white-box: tests/<module>/ sees src/<module>/'s private headers.
  get_filename_component(module ${CMAKE_CURRENT_SOURCE_DIR} NAME)
  servelab_white_box(${T_NAME} ${module})
  # Property list built conditionally: an empty LABELS value would shift the key/value pairs.
  set(props ENVIRONMENT "SERVELAB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  if(T_LABELS)
    list(APPEND props LABELS "${T_LABELS}")
  endif()
  # PREFIX names the ctest entries "<prefix>Suite.Test" (e.g. "model." so that `ctest -R model` selects them).
  set(prefix "")
  if(T_PREFIX)
    set(prefix TEST_PREFIX "${T_PREFIX}")
  endif()
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 120 ${prefix} PROPERTIES ${props})
endfunction()
