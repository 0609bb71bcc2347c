# core/manager/detectors/: the pause rules' sensors, one file pair per detector.
target_sources(tessera_manager PRIVATE
    detectors/PauseDetectors.cpp detectors/PauseDetectors.h
    detectors/BatteryDetector.cpp detectors/BatteryDetector.h
    detectors/ExclusiveAppDetector.cpp detectors/ExclusiveAppDetector.h
    detectors/FullscreenDetector.cpp detectors/FullscreenDetector.h
    detectors/GpuGraphicsDetector.cpp detectors/GpuGraphicsDetector.h
    detectors/GpuMonitor.cpp detectors/GpuMonitor.h
    detectors/GpuTemperatureDetector.cpp detectors/GpuTemperatureDetector.h
    detectors/ProcessScanner.cpp detectors/ProcessScanner.h
    detectors/TimeWindowDetector.cpp detectors/TimeWindowDetector.h
    detectors/TimeWindows.cpp detectors/TimeWindows.h
    detectors/UserActiveDetector.cpp detectors/UserActiveDetector.h
    detectors/X11Connection.cpp detectors/X11Connection.h
)
# The platforms' own sensors: Windows' notification state (shell32) and power status; macOS's idle
# time (CoreGraphics) and power sources (IOKit).
if(WIN32)
    target_link_libraries(tessera_manager PRIVATE shell32)
elseif(APPLE)
    target_link_libraries(tessera_manager PRIVATE "-framework CoreFoundation" "-framework CoreGraphics"
        "-framework IOKit")
endif()
