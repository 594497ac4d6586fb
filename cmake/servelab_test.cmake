# servelab_add_test(NAME <name> SOURCES a.cc b.cc LIBS servelab_x ... [LABELS l])
# One GoogleTest executable per test file group, registered with ctest through gtest_discover_tests.
include(GoogleTest)
function(servelab_add_test)
  cmake_parse_arguments(T "" "NAME" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main Threads::Threads)
  gtest_discover_tests(${T_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}"
                       ENVIRONMENT "SERVELAB_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endfunction()
