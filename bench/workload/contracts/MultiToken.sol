// SPDX-License-Identifier: Apache-2.0
pragma solidity ^0.8.20;

/// A minimal ERC-1155 for the indexer's tests: TransferSingle and TransferBatch as the standard emits them.
contract MultiToken {
    event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value);
    event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values);

    mapping(uint256 => mapping(address => uint256)) public balanceOf;

    function mint(address to, uint256 id, uint256 amount) external {
        balanceOf[id][to] += amount;
        emit TransferSingle(msg.sender, address(0), to, id, amount);
    }

    function mintBatch(address to, uint256[] calldata ids, uint256[] calldata amounts) external {
        for (uint256 i = 0; i < ids.length; i++) balanceOf[ids[i]][to] += amounts[i];
        emit TransferBatch(msg.sender, address(0), to, ids, amounts);
    }

    function transfer(address to, uint256 id, uint256 amount) external {
        balanceOf[id][msg.sender] -= amount;
        balanceOf[id][to] += amount;
        emit TransferSingle(msg.sender, msg.sender, to, id, amount);
    }

    function transferBatch(address to, uint256[] calldata ids, uint256[] calldata amounts) external {
        for (uint256 i = 0; i < ids.length; i++) {
            balanceOf[ids[i]][msg.sender] -= amounts[i];
            balanceOf[ids[i]][to] += amounts[i];
        }
        emit TransferBatch(msg.sender, msg.sender, to, ids, amounts);
    }

    function burn(uint256 id, uint256 amount) external {
        balanceOf[id][msg.sender] -= amount;
        emit TransferSingle(msg.sender, msg.sender, address(0), id, amount);
    }
}
