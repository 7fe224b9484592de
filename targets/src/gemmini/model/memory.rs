//! The DRAM the model reads and writes.

use super::ModelError;

/// The DRAM the model reads and writes: byte addresses as `mvin`/`mvout` carry them.
pub trait Dram {
    /// Reads `buf.len()` bytes from `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), ModelError>;
    /// Writes `data` at `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ModelError>;
}

/// A flat DRAM: `bytes[i]` is at address `base + i`. Address 0 means "zeros" to `mvin`,
/// so `base` should not be 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatMemory {
    /// The address of `bytes[0]`.
    pub base: u64,
    /// The contents.
    pub bytes: Vec<u8>,
}

impl FlatMemory {
    /// The default base address of [`FlatMemory::zeroed`].
    pub const DEFAULT_BASE: u64 = 0x1000_0000;

    /// `size` zero bytes at [`FlatMemory::DEFAULT_BASE`].
    pub fn zeroed(size: usize) -> FlatMemory {
        FlatMemory {
            base: Self::DEFAULT_BASE,
            bytes: vec![0; size],
        }
    }
    /// The byte range of `[addr, addr + len)` in `bytes`, if inside.
    fn range(&self, addr: u64, len: usize) -> Result<std::ops::Range<usize>, ModelError> {
        let err = ModelError::Dram { addr, len };
        let off = addr.checked_sub(self.base).ok_or(err.clone())?;
        let off = usize::try_from(off).map_err(|_| err.clone())?;
        let end = off.checked_add(len).ok_or(err.clone())?;
        if end > self.bytes.len() {
            return Err(err);
        }
        Ok(off..end)
    }
    /// The address of byte `offset`.
    pub fn addr(&self, offset: usize) -> u64 {
        self.base + offset as u64
    }
}

impl Dram for FlatMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), ModelError> {
        let r = self.range(addr, buf.len())?;
        buf.copy_from_slice(&self.bytes[r]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ModelError> {
        let r = self.range(addr, data.len())?;
        self.bytes[r].copy_from_slice(data);
        Ok(())
    }
}

/// The host's own memory: DRAM addresses are host pointers (the host-header path, where C
/// passes its pointers to the model).
#[derive(Debug)]
pub struct HostMemory {
    _private: (),
}

impl HostMemory {
    /// A view of the whole address space.
    ///
    /// # Safety
    /// Every DRAM address that the executed instructions carry, with the bytes they read or
    /// write from there, must be valid host memory for that access while the model runs
    /// (reads of memory that is being written elsewhere, or writes to memory Rust holds a
    /// reference to, are undefined behaviour).
    pub unsafe fn new() -> HostMemory {
        HostMemory { _private: () }
    }
}

impl Dram for HostMemory {
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), ModelError> {
        if addr == 0 {
            return Err(ModelError::Dram {
                addr,
                len: buf.len(),
            });
        }
        // SAFETY: the contract of `HostMemory::new`.
        unsafe {
            std::ptr::copy_nonoverlapping(addr as usize as *const u8, buf.as_mut_ptr(), buf.len())
        };
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), ModelError> {
        if addr == 0 {
            return Err(ModelError::Dram {
                addr,
                len: data.len(),
            });
        }
        // SAFETY: the contract of `HostMemory::new`.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len())
        };
        Ok(())
    }
}
