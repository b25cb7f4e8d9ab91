! SPDX-License-Identifier: MIT
!
! Fortran binding of spmtap's marker API (include/spmtap.h, docs/markers.md).
!
!   use spmtap_markers
!   call spmtap_region_begin("solve")
!   ...
!   call spmtap_region_end()
!
! Regions nest, per thread; under `spmtap record -- ./app` they become phases
! in every output, elsewhere the calls do nothing.  Compile this file with
! the application (gfortran -c spmtap_markers.f90) and link -lspmtap.
module spmtap_markers
  use, intrinsic :: iso_c_binding, only: c_char, c_null_char
  implicit none
  private
  public :: spmtap_region_begin, spmtap_region_end

  interface
    subroutine c_region_begin(name) bind(C, name="spmtap_region_begin")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_region_begin
    subroutine c_region_end() bind(C, name="spmtap_region_end")
    end subroutine c_region_end
  end interface

contains

  ! Fortran strings carry their length, C strings a terminating NUL: add it
  ! (trailing blanks of a fixed-length variable are not part of the name).
  subroutine spmtap_region_begin(name)
    character(len=*), intent(in) :: name
    call c_region_begin(trim(name) // c_null_char)
  end subroutine spmtap_region_begin

  subroutine spmtap_region_end()
    call c_region_end()
  end subroutine spmtap_region_end

end module spmtap_markers
